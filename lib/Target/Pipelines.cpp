//===- Pipelines.cpp - hectorc's stages and pass pipelines ------*- C++ -*-===//

#include "hector/Target/Pipelines.h"

#include "hector/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;

llvm::StringRef hector::stageName(Stage stage) {
  switch (stage) {
  case Stage::HGraph:
    return "hgraph";
  case Stage::HTmpl:
    return "htmpl";
  case Stage::Loops:
    return "loops";
  case Stage::GPU:
    return "gpu";
  case Stage::LLVM:
    return "llvm";
  }
  return "?";
}

llvm::StringRef hector::targetName(Target target) {
  return target == Target::CUDA ? "cuda" : "cpu";
}

std::string hector::stagePipeline(Stage stage, const PipelineOptions &options) {
  bool cuda = options.target == Target::CUDA;
  switch (stage) {
  case Stage::HGraph: {
    // Autodiff (the optimisations then see the forward and backward
    // functions), then reordering: it decides on uncompacted costs and may
    // remove a map that compaction would otherwise have marked.
    std::string pipeline;
    auto append = [&](const std::string &pass) {
      pipeline += (pipeline.empty() ? "" : ",") + pass;
    };
    // For training, reorderings whose weight products autodiff can
    // differentiate run on the model first: the forward then never forms
    // (or saves) the per-row maps they remove, e.g. RGAT's W_r·h_dst.
    if (options.training && options.linearReordering)
      append("hgraph-linear-reordering{" + options.graphSizes +
             " differentiable=true}");
    if (options.training)
      append("hgraph-autodiff{save=" + options.savePolicy + "}");
    if (options.linearReordering)
      append("hgraph-linear-reordering{" + options.graphSizes +
             (options.typedEndpoints ? " typed-endpoints=true" : "") + "}");
    if (options.compactMaterialization)
      append("hgraph-compact-materialization{" + options.graphSizes + "}");
    // Last: the plan sizes what the optimisations left.
    if (options.training && options.offloadMode != "none")
      append("hgraph-offload-scheduling{" + options.graphSizes + " mode=" +
             options.offloadMode + " capacity-mib=" +
             std::to_string(options.offloadCapacityMiB) + "}");
    return pipeline;
  }
  case Stage::HTmpl:
    // Host-resident inputs are marked first; the lowering carries the mark
    // to the entry point's arguments (and the manifest).
    return (options.hostResident.empty()
                ? std::string()
                : "hgraph-host-resident{names=" +
                      llvm::join(options.hostResident, ",") + "},") +
           (options.splitSoftmax ? "hgraph-to-htmpl{split-softmax=true}"
                                 : "hgraph-to-htmpl");
  case Stage::Loops:
    if (!cuda)
      return "hector-cpu-gemm,hector-cpu-traversal,htmpl-to-loops";
    if (!options.gpuTemplates)
      return "htmpl-to-loops";
    return "htmpl-to-gpu{lanes-per-instance=" +
           std::to_string(options.traversalLanes) + " precision=" +
           (options.precision == Precision::TF32 ? "tf32" : "fp32") +
           "},htmpl-to-loops";
  case Stage::GPU:
    if (!cuda)
      return "";
    // Flat loops onto blocks x threads (nests come shaped so), all into
    // gpu.launch; host buffers into device buffers; constants and sizes
    // sunk into the launch bodies (so they stay compile-time constants in
    // the kernels instead of becoming parameters); kernels outlined, their
    // shared memory 16-byte aligned; the host side made asynchronous on one
    // stream per call (gpu.alloc only lowers in its async form).
    return "hector-map-parallel-loops{block-size=" +
           std::to_string(options.gpuBlockSize) +
           "},func.func(gpu-map-parallel-loops),convert-parallel-loops-to-gpu,"
           "canonicalize,hector-check-host-resident,"
           "hector-host-memory-to-gpu,"
           "gpu-launch-sink-index-computations,gpu-kernel-outlining,"
           "hector-align-workgroup-memory,canonicalize,cse,"
           "func.func(gpu-async-region)";
  case Stage::LLVM:
    if (cuda)
      return "arith-expand,gpu-lower-to-nvvm-pipeline{"
             "cubin-chip=" +
             options.gpuArch + " cubin-features=" + options.gpuFeatures +
             " cubin-format=" + options.gpuBinaryFormat +
             " opt-level=" + std::to_string(options.optLevel) + "}";
    // Every heap allocation is checked (the runtime refuses one past the cap
    // on temporaries: the function frees what it holds and returns);
    // outermost parallel loops run on the library's thread pool, nested ones
    // sequentially (convert-scf-to-cf lowers them); heap memory comes from
    // the CPU runtime (which keeps large blocks for the next call); math
    // functions without an LLVM intrinsic call libm.
    return "hector-cpu-check-allocations,hector-cpu-parallel,lower-affine,convert-scf-to-cf,"
           "expand-strided-metadata,lower-affine,arith-expand,"
           "convert-vector-to-llvm,"
           "finalize-memref-to-llvm{use-generic-functions=true},convert-math-to-llvm,convert-math-to-libm,"
           "convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
           "convert-func-to-llvm,reconcile-unrealized-casts,canonicalize,cse";
  }
  return "";
}

LogicalResult hector::checkGPUTarget(const PipelineOptions &options,
                                     std::string &why) {
  // The oldest PTX ISA (x10) that LLVM's NVPTX backend accepts per chip.
  static const std::pair<llvm::StringLiteral, int> minimumPTX[] = {
      {"sm_50", 40},  {"sm_52", 41},  {"sm_53", 42},  {"sm_60", 50},
      {"sm_61", 50},  {"sm_62", 50},  {"sm_70", 60},  {"sm_72", 61},
      {"sm_75", 63},  {"sm_80", 70},  {"sm_86", 71},  {"sm_87", 74},
      {"sm_89", 78},  {"sm_90", 78},  {"sm_90a", 80}, {"sm_100", 86},
      {"sm_100a", 86}, {"sm_120", 87}, {"sm_120a", 87}};
  int needed = 0;
  std::string known;
  for (const auto &[chip, ptx] : minimumPTX) {
    known += (known.empty() ? "" : ", ") + chip.str();
    if (chip == options.gpuArch)
      needed = ptx;
  }
  if (!needed) {
    why = "unsupported --gpu-arch=" + options.gpuArch + " (one of: " + known +
          ")";
    return failure();
  }
  int ptx = 0;
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(options.gpuFeatures).split(features, ',', -1, false);
  for (llvm::StringRef feature : features) {
    int version = 0;
    if (!feature.consume_front("+ptx") || feature.getAsInteger(10, version) ||
        version <= 0) {
      why = "--gpu-features must be +ptxNN (a PTX ISA version, e.g. +ptx80), "
            "got '" +
            options.gpuFeatures + "'";
      return failure();
    }
    ptx = version;
  }
  if (ptx < needed) {
    why = options.gpuArch + " needs PTX ISA " + std::to_string(needed / 10) +
          "." + std::to_string(needed % 10) + " or newer: pass --gpu-features=+ptx" +
          std::to_string(needed) + " (or newer)";
    return failure();
  }
  return success();
}

LogicalResult hector::runStage(ModuleOp module, Stage stage,
                               const PipelineOptions &options) {
  std::string pipeline = stagePipeline(stage, options);
  if (pipeline.empty())
    return success();
  PassManager pm(module.getContext());
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  if (failed(parsePassPipeline(pipeline, pm, errs)))
    return module.emitError("internal error: the ")
           << stageName(stage) << " pipeline '" << pipeline
           << "' does not parse: " << parseErrors;
  // --mlir-print-ir-after-all and friends, where the tool registered them
  // (fails harmlessly where it did not).
  (void)applyPassManagerCLOptions(pm);
  return pm.run(module);
}

void hector::registerTargetDialects(DialectRegistry &registry) {
  hector::registerAllDialects(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void hector::registerTargetPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerAllPasses();
    hector::registerAllPasses();
    hector::registerBackendPasses();
  });
}

namespace hector {
#define GEN_PASS_REGISTRATION
#include "hector/Target/Passes.h.inc"
} // namespace hector

void hector::registerBackendPasses() { registerHectorTargetPasses(); }
