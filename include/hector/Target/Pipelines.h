//===- Pipelines.h - hectorc's stages and pass pipelines --------*- C++ -*-===//
//
// The stages a model goes through on its way to a shared library, and the
// pass pipeline between each two (docs/backends.md lists them), built in C++
// from typed options. hector-opt registers the whole lowering as
// `hector-cpu-pipeline` and `hector-cuda-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_PIPELINES_H
#define HECTOR_TARGET_PIPELINES_H

#include "hector/Conversion/Passes.h"
#include "hector/Dialect/HGraph/Transforms/Passes.h"
#include "hector/Target/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace hector {

enum class Target { CPU, CUDA };

/// CUDA: the arithmetic of GEMM products (htmpl-to-gpu's precision).
enum class Precision { FP32, TF32 };

/// IR stages in pipeline order. `GPU` (kernels outlined into gpu.module,
/// host code launching them) exists for the CUDA target only.
enum class Stage { HGraph, HTmpl, Loops, GPU, LLVM };

/// What the pipelines do, stage by stage; the target is an argument of the
/// builders (hector-opt registers one pipeline per target). Options marked
/// "cuda:" are ignored by the CPU pipeline. The defaults are hectorc's.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  // HGraph stage.
  Option<bool> training{
      *this, "training",
      llvm::cl::desc("Derive training entry points (hgraph-autodiff) before "
                     "the optimisations"),
      llvm::cl::init(false)};
  Option<std::string> savePolicy{
      *this, "save",
      llvm::cl::desc("With training: what the forward saves for the "
                     "backward (materialized, all, none)"),
      llvm::cl::init("materialized")};
  Option<std::string> offloadMode{
      *this, "offload",
      llvm::cl::desc("With training: hgraph-offload-scheduling's mode (none: "
                     "not run, host, disk, auto)"),
      llvm::cl::init("none")};
  Option<int64_t> offloadCapacityMiB{
      *this, "offload-capacity-mib",
      llvm::cl::desc("With offload: the device memory the step may use, MiB "
                     "(0: no limit)"),
      llvm::cl::init(0)};
  /// With offload: hgraph-offload-scheduling's cost-model rates, measured
  /// on the machine the library is for (hectorc's --offload-rates sets
  /// them); the defaults are the pass's own.
  Option<double> offloadDeviceGBps{
      *this, "offload-device-gbps",
      llvm::cl::desc("With offload: device memory bandwidth, GB/s "
                     "(hgraph-offload-scheduling's device-gbps)"),
      llvm::cl::init(OffloadSchedulingOptions().deviceGBps)};
  Option<double> offloadGemmTFlops{
      *this, "offload-gemm-tflops",
      llvm::cl::desc("With offload: GEMM peak, TFLOP/s (gemm-tflops)"),
      llvm::cl::init(OffloadSchedulingOptions().gemmTFlops)};
  Option<double> offloadHostWriteGBps{
      *this, "offload-host-write-gbps",
      llvm::cl::desc("With offload: device to pinned host copies, GB/s "
                     "(host-write-gbps)"),
      llvm::cl::init(OffloadSchedulingOptions().hostWriteGBps)};
  Option<double> offloadHostReadGBps{
      *this, "offload-host-read-gbps",
      llvm::cl::desc("With offload: pinned host to device copies, GB/s "
                     "(host-read-gbps)"),
      llvm::cl::init(OffloadSchedulingOptions().hostReadGBps)};
  Option<double> offloadDiskWriteGBps{
      *this, "offload-disk-write-gbps",
      llvm::cl::desc("With offload: disk writes, GB/s (disk-write-gbps)"),
      llvm::cl::init(OffloadSchedulingOptions().diskWriteGBps)};
  Option<double> offloadDiskReadGBps{
      *this, "offload-disk-read-gbps",
      llvm::cl::desc("With offload: disk reads, GB/s (disk-read-gbps)"),
      llvm::cl::init(OffloadSchedulingOptions().diskReadGBps)};
  Option<bool> linearReordering{
      *this, "linear-reordering",
      llvm::cl::desc("Run hgraph-linear-reordering"), llvm::cl::init(true)};
  Option<bool> compactMaterialization{
      *this, "compact-materialization",
      llvm::cl::desc("Run hgraph-compact-materialization"),
      llvm::cl::init(true)};
  /// The graph the library is for, which the optimisations' profitability
  /// decisions use (0: unknown, the ratios of docs/optimizations.md).
  Option<int64_t> numNodes{*this, "num-nodes",
                           llvm::cl::desc("Nodes N of the graph (0: unknown)"),
                           llvm::cl::init(0)};
  Option<int64_t> numEdges{*this, "num-edges",
                           llvm::cl::desc("Edges E (0: unknown)"),
                           llvm::cl::init(0)};
  Option<int64_t> numPairs{
      *this, "num-pairs",
      llvm::cl::desc("Unique (source, edge type) pairs P (0: unknown)"),
      llvm::cl::init(0)};
  Option<int64_t> numEdgeTypes{*this, "num-edge-types",
                               llvm::cl::desc("Edge types R (0: unknown)"),
                               llvm::cl::init(0)};
  Option<int64_t> numNodeTypes{*this, "num-node-types",
                               llvm::cl::desc("Node types T (0: unknown)"),
                               llvm::cl::init(0)};
  Option<bool> typedEndpoints{
      *this, "typed-endpoints",
      llvm::cl::desc("The graph's edge types have fixed endpoint node types, "
                     "which lets reordering multiply node-typed and "
                     "edge-typed weights"),
      llvm::cl::init(false)};

  // HTmpl stage.
  Option<bool> splitSoftmax{
      *this, "split-softmax",
      llvm::cl::desc("Lower edge_softmax in two edge traversals "
                     "(hgraph-to-htmpl's split-softmax)"),
      llvm::cl::init(false)};
  Option<bool> fuseSoftmaxAggregate{
      *this, "fuse-softmax-aggregate",
      llvm::cl::desc("Lower an edge_softmax whose only use is a weighted sum "
                     "into the destinations together with it, in one pass "
                     "over each CSR row (hgraph-to-htmpl's "
                     "fuse-softmax-aggregate)"),
      llvm::cl::init(false)};
  ListOption<std::string> hostResident{
      *this, "host-resident",
      llvm::cl::desc("cuda: node-wise inputs (argument names) that stay in "
                     "pinned, mapped host memory (hgraph-host-resident)")};

  // Loops stage.
  Option<bool> gpuTemplates{
      *this, "gpu-templates",
      llvm::cl::desc("cuda: lower htmpl instances with htmpl-to-gpu before "
                     "htmpl-to-loops takes whatever is left"),
      llvm::cl::init(true)};
  Option<int64_t> traversalLanes{
      *this, "traversal-lanes",
      llvm::cl::desc("cuda: htmpl-to-gpu's lanes-per-instance (0: chosen per "
                     "traversal)"),
      llvm::cl::init(0)};
  Option<Precision> precision{
      *this, "precision",
      llvm::cl::desc("cuda: arithmetic of the GEMM products"),
      llvm::cl::init(Precision::FP32),
      llvm::cl::values(
          clEnumValN(Precision::FP32, "fp32", "fp32 FMAs"),
          clEnumValN(Precision::TF32, "tf32",
                     "TF32 tensor cores in the row-mode GEMMs of the vector "
                     "kernel"))};
  Option<std::string> gemmStaging{
      *this, "gemm-staging",
      llvm::cl::desc("cuda: how the fp32 vector GEMM kernel stages its "
                     "tiles: async (cp.async) or registers"),
      llvm::cl::init(HTmplToGPUOptions().gemmStaging)};
  Option<int64_t> gemmBlocksPerSM{
      *this, "gemm-blocks-per-sm",
      llvm::cl::desc("cuda: blocks per SM the asynchronously staged GEMM "
                     "kernels are register-limited for (0: ptxas chooses)"),
      llvm::cl::init(HTmplToGPUOptions().gemmBlocksPerSM)};

  // GPU stage.
  Option<int64_t> gpuBlockSize{
      *this, "gpu-block-size",
      llvm::cl::desc("cuda: threads per block of flat parallel loops"),
      llvm::cl::init(kDefaultGPUBlockSize)};

  // LLVM stage.
  Option<std::string> gpuArch{
      *this, "gpu-arch",
      llvm::cl::desc("cuda: the chip the kernels are built for"),
      llvm::cl::init("sm_90")};
  Option<std::string> gpuFeatures{
      *this, "gpu-features", llvm::cl::desc("cuda: PTX features"),
      llvm::cl::init("+ptx80")};
  Option<std::string> gpuBinaryFormat{
      *this, "gpu-format",
      llvm::cl::desc("cuda: what the kernels are embedded as: fatbin or bin "
                     "(machine code), isa (PTX text)"),
      llvm::cl::init("fatbin")};
  Option<int> optLevel{
      *this, "opt-level",
      llvm::cl::desc("cuda: optimisation level of device code (0-3)"),
      llvm::cl::init(2)};
  Option<std::string> cudaToolkit{
      *this, "toolkit",
      llvm::cl::desc("cuda: CUDA toolkit with bin/ptxas and nvvm/libdevice "
                     "(gpu-module-to-binary's toolkit; empty: $CUDA_ROOT, "
                     "else LLVM's default)"),
      llvm::cl::init("")};

  /// Where the registered pipelines stop (hectorc runs stage by stage).
  Option<Stage> lastStage{
      *this, "stop-after",
      llvm::cl::desc("The last stage the pipeline reaches"),
      llvm::cl::init(Stage::LLVM),
      llvm::cl::values(
          clEnumValN(Stage::HGraph, "hgraph", "the hgraph-level passes"),
          clEnumValN(Stage::HTmpl, "htmpl", "hgraph-to-htmpl"),
          clEnumValN(Stage::Loops, "loops", "the loop lowering"),
          clEnumValN(Stage::GPU, "gpu",
                     "cuda: kernels outlined (the CPU target has no such "
                     "stage)"),
          clEnumValN(Stage::LLVM, "llvm", "the LLVM dialect"))};
};

llvm::StringRef stageName(Stage stage);
llvm::StringRef targetName(Target target);

/// Adds to `pm` (anchored on builtin.module) the passes that take a module
/// from the stage before `stage` to `stage`: for HGraph the hgraph-level
/// transformations (autodiff when training, then the optimisations);
/// nothing for GPU on the CPU target.
void buildStagePipeline(mlir::OpPassManager &pm, Target target, Stage stage,
                        const PipelineOptions &options);

/// Adds every stage up to `options.lastStage`, with
/// hector-prepare-entry-points after the loops stage (where hectorc checks
/// the entry points and describes them for the manifest): what
/// `hector-cpu-pipeline` and `hector-cuda-pipeline` run.
void buildPipeline(mlir::OpPassManager &pm, Target target,
                   const PipelineOptions &options);

/// Registers `hector-cpu-pipeline` and `hector-cuda-pipeline` (the options
/// of PipelineOptions) with the global registry, for hector-opt.
void registerPipelines();

/// Checks that LLVM's NVPTX backend accepts `options.gpuArch` with
/// `options.gpuFeatures` (it aborts the process on a PTX version too old
/// for the chip, e.g. sm_90 with +ptx60). On failure `why` says what to use.
mlir::LogicalResult checkGPUTarget(const PipelineOptions &options,
                                   std::string &why);

/// Runs the pipeline of `stage` on `module`; failures are reported through
/// the context's diagnostics.
mlir::LogicalResult runStage(mlir::ModuleOp module, Target target, Stage stage,
                             const PipelineOptions &options);

/// Everything the backends parse, lower and translate: Hector's and all
/// upstream dialects, their extensions (NVVM target serialisation included)
/// and their LLVM IR translations.
void registerTargetDialects(mlir::DialectRegistry &registry);

/// Registers Hector's, the backends' and all upstream passes, and Hector's
/// pipelines, with the global registry (for --mlir-print-ir-* and pass
/// names in diagnostics; hector-opt's command line). Idempotent.
void registerTargetPasses();

} // namespace hector

#endif // HECTOR_TARGET_PIPELINES_H
