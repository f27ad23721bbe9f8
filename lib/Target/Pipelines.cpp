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
  case Stage::HGraph:
    return "";
  case Stage::HTmpl:
    return "hgraph-to-htmpl";
  case Stage::Loops:
    return "htmpl-to-loops";
  case Stage::GPU:
    if (!cuda)
      return "";
    // Flat loops onto blocks x threads (nests come shaped so), all into
    // gpu.launch; host buffers into device buffers; kernels outlined; the
    // host side made asynchronous on one stream per call (gpu.alloc only
    // lowers in its async form).
    return "hector-map-parallel-loops{block-size=" +
           std::to_string(options.gpuBlockSize) +
           "},func.func(gpu-map-parallel-loops),convert-parallel-loops-to-gpu,"
           "canonicalize,"
           "hector-host-memory-to-gpu,"
           "gpu-kernel-outlining,canonicalize,cse,"
           "func.func(gpu-async-region)";
  case Stage::LLVM:
    if (cuda)
      return "arith-expand,gpu-lower-to-nvvm-pipeline{"
             "cubin-chip=" +
             options.gpuArch + " cubin-features=" + options.gpuFeatures +
             " cubin-format=" + options.gpuBinaryFormat +
             " opt-level=" + std::to_string(options.optLevel) + "}";
    // Parallel loops run sequentially (convert-scf-to-cf lowers
    // scf.parallel); math functions without an LLVM intrinsic call libm.
    return "lower-affine,convert-scf-to-cf,"
           "expand-strided-metadata,lower-affine,arith-expand,"
           "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,"
           "convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
           "convert-func-to-llvm,reconcile-unrealized-casts,canonicalize,cse";
  }
  return "";
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

void hector::registerBackendPasses() {
  mlir::registerPass([] { return createMapParallelLoopsPass(); });
  mlir::registerPass([] { return createHostMemoryToGPUPass(); });
}
