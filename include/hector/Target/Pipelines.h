//===- Pipelines.h - hectorc's stages and pass pipelines --------*- C++ -*-===//
//
// The stages a model goes through on its way to a shared library, and the
// pass pipeline between each two (docs/backends.md lists them). Pipelines
// are built from pass names, so the Hector passes of other libraries
// (hgraph-to-htmpl, htmpl-to-loops) are picked up as registered.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_PIPELINES_H
#define HECTOR_TARGET_PIPELINES_H

#include "hector/Target/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace hector {

enum class Target { CPU, CUDA };

/// CUDA: the arithmetic of GEMM products (htmpl-to-gpu's precision).
enum class Precision { FP32, TF32 };

/// IR stages in pipeline order. `GPU` (kernels outlined into gpu.module,
/// host code launching them) exists for the CUDA target only.
enum class Stage { HGraph, HTmpl, Loops, GPU, LLVM };

struct PipelineOptions {
  Target target = Target::CPU;
  /// CUDA: the chip the cubin is built for, and the PTX features.
  std::string gpuArch = "sm_90";
  std::string gpuFeatures = "+ptx80";
  /// CUDA: "fatbin" or "bin" embeds machine code, "isa" embeds PTX text.
  std::string gpuBinaryFormat = "fatbin";
  /// Optimisation level of device code (0-3).
  int optLevel = 2;
  int64_t gpuBlockSize = kDefaultGPUBlockSize;
  /// CUDA: lower htmpl instances with htmpl-to-gpu (the GPU-specialised
  /// templates) before htmpl-to-loops takes whatever is left.
  bool gpuTemplates = true;
  /// CUDA: htmpl-to-gpu's lanes-per-instance (0: chosen per traversal).
  int64_t traversalLanes = 0;
  /// CUDA: fp32 FMAs everywhere, or TF32 tensor cores in the row-mode GEMMs
  /// of the vector kernel (htmpl-to-gpu's precision).
  Precision precision = Precision::FP32;
  /// Derive training entry points (`hgraph-autodiff`) before lowering, with
  /// this policy for what the forward saves for the backward.
  bool training = false;
  std::string savePolicy = "materialized";
  /// With training: hgraph-offload-scheduling's mode (none: not run) and
  /// capacity.
  std::string offloadMode = "none";
  int64_t offloadCapacityMiB = 0;
  /// The hgraph-level optimisations (docs/optimizations.md), run on every
  /// hgraph.func at the HGraph stage.
  bool linearReordering = true;
  bool compactMaterialization = true;
  /// The graph sizes their profitability decisions use, as pass options
  /// ("num-nodes=7262 num-edges=48810 ..."); empty: the passes' defaults.
  std::string graphSizes;
  /// The graph's edge types have fixed endpoint node types, which lets
  /// reordering multiply node-typed and edge-typed weights.
  bool typedEndpoints = false;
  /// Lower edge_softmax in two edge traversals instead of the stitched
  /// traversal per destination (hgraph-to-htmpl's split-softmax).
  bool splitSoftmax = false;
  /// CUDA: names of node-wise inputs that stay in pinned, mapped host
  /// memory (hgraph-host-resident before the lowering).
  std::vector<std::string> hostResident;
};

llvm::StringRef stageName(Stage stage);
llvm::StringRef targetName(Target target);

/// The textual pass pipeline, anchored on builtin.module but written without
/// the anchor, that takes a module from the stage before `stage` to `stage`
/// (for HGraph: the hgraph-level transformations: autodiff when training,
/// then the optimisations; empty for GPU on the CPU target). hector-opt runs
/// the
/// same with --pass-pipeline='builtin.module(<pipeline>)'.
std::string stagePipeline(Stage stage, const PipelineOptions &options);

/// Checks that LLVM's NVPTX backend accepts `options.gpuArch` with
/// `options.gpuFeatures` (it aborts the process on a PTX version too old
/// for the chip, e.g. sm_90 with +ptx60). On failure `why` says what to use.
mlir::LogicalResult checkGPUTarget(const PipelineOptions &options,
                                   std::string &why);

/// Runs the pipeline of `stage` on `module`; failures are reported through
/// the context's diagnostics.
mlir::LogicalResult runStage(mlir::ModuleOp module, Stage stage,
                             const PipelineOptions &options);

/// Everything the backends parse, lower and translate: Hector's and all
/// upstream dialects, their extensions (NVVM target serialisation included)
/// and their LLVM IR translations.
void registerTargetDialects(mlir::DialectRegistry &registry);

/// Registers Hector's, the backends' and all upstream passes with the
/// global registry, which the textual pipelines are parsed against.
/// Idempotent.
void registerTargetPasses();

} // namespace hector

#endif // HECTOR_TARGET_PIPELINES_H
