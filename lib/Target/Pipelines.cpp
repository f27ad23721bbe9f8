//===- Pipelines.cpp - hectorc's stages and pass pipelines ------*- C++ -*-===//

#include "hector/Target/Pipelines.h"

#include "hector/Conversion/Passes.h"
#include "hector/Dialect/HGraph/Transforms/Passes.h"
#include "hector/InitAll.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

#include <mutex>

using namespace mlir;
using namespace hector;

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

namespace {

/// The graph sizes of `options` into the options of an hgraph pass that
/// takes them (LinearReordering, CompactMaterialization, OffloadScheduling).
template <typename GraphPassOptions>
GraphPassOptions withGraphSizes(const PipelineOptions &options) {
  GraphPassOptions passOptions;
  passOptions.numNodes = options.numNodes;
  passOptions.numEdges = options.numEdges;
  passOptions.numPairs = options.numPairs;
  passOptions.numEdgeTypes = options.numEdgeTypes;
  passOptions.numNodeTypes = options.numNodeTypes;
  return passOptions;
}

void buildHGraphStage(OpPassManager &pm, const PipelineOptions &options) {
  // Autodiff (the optimisations then see the forward and backward
  // functions), then reordering: it decides on uncompacted costs and may
  // remove a map that compaction would otherwise have marked.
  //
  // For training, reorderings whose weight products autodiff can
  // differentiate run on the model first: the forward then never forms (or
  // saves) the per-row maps they remove, e.g. RGAT's W_r·h_dst.
  if (options.training && options.linearReordering) {
    auto reordering = withGraphSizes<LinearReorderingOptions>(options);
    reordering.differentiable = true;
    pm.addPass(createLinearReordering(reordering));
  }
  if (options.training) {
    HGraphAutodiffOptions autodiff;
    autodiff.save = options.savePolicy;
    pm.addPass(createHGraphAutodiff(autodiff));
  }
  if (options.linearReordering) {
    auto reordering = withGraphSizes<LinearReorderingOptions>(options);
    reordering.typedEndpoints = options.typedEndpoints;
    pm.addPass(createLinearReordering(reordering));
  }
  if (options.compactMaterialization)
    pm.addPass(createCompactMaterialization(
        withGraphSizes<CompactMaterializationOptions>(options)));
  // Last: the plan sizes what the optimisations left.
  if (options.training && options.offloadMode != "none") {
    auto offload = withGraphSizes<OffloadSchedulingOptions>(options);
    offload.mode = options.offloadMode;
    offload.capacityMiB = options.offloadCapacityMiB;
    // The pass checks that each rate is positive and finite.
    offload.deviceGBps = options.offloadDeviceGBps;
    offload.gemmTFlops = options.offloadGemmTFlops;
    offload.hostWriteGBps = options.offloadHostWriteGBps;
    offload.hostReadGBps = options.offloadHostReadGBps;
    offload.diskWriteGBps = options.offloadDiskWriteGBps;
    offload.diskReadGBps = options.offloadDiskReadGBps;
    pm.addPass(createOffloadScheduling(offload));
  }
}

void buildHTmplStage(OpPassManager &pm, const PipelineOptions &options) {
  // Host-resident inputs are marked first; the lowering carries the mark to
  // the entry point's arguments (and the manifest).
  if (!options.hostResident.empty()) {
    HGraphHostResidentOptions hostResident;
    hostResident.names.assign(options.hostResident.begin(),
                              options.hostResident.end());
    pm.addPass(createHGraphHostResident(hostResident));
  }
  HGraphToHTmplOptions lowering;
  lowering.splitSoftmax = options.splitSoftmax;
  lowering.fuseSoftmaxAggregate = options.fuseSoftmaxAggregate;
  pm.addPass(createHGraphToHTmpl(lowering));
}

void buildLoopsStage(OpPassManager &pm, Target target,
                     const PipelineOptions &options) {
  // The target's own lowerings first; htmpl-to-loops takes what they leave.
  if (target == Target::CPU) {
    pm.addPass(createCPUGemm());
    pm.addPass(createCPUTraversal());
  } else if (options.gpuTemplates) {
    HTmplToGPUOptions gpu;
    gpu.lanesPerInstance = options.traversalLanes;
    gpu.precision = options.precision == Precision::TF32 ? "tf32" : "fp32";
    gpu.gemmStaging = options.gemmStaging;
    gpu.gemmBlocksPerSM = options.gemmBlocksPerSM;
    pm.addPass(createHTmplToGPU(gpu));
  }
  pm.addPass(createHTmplToLoops());
}

void buildGPUStage(OpPassManager &pm, const PipelineOptions &options) {
  // Flat loops onto blocks x threads (nests come shaped so), all into
  // gpu.launch; host buffers into device buffers; constants and sizes sunk
  // into the launch bodies (so they stay compile-time constants in the
  // kernels instead of becoming parameters); kernels outlined, their shared
  // memory 16-byte aligned and their occupancy requests set; the host side
  // made asynchronous on one stream
  // per call (gpu.alloc only lowers in its async form).
  MapParallelLoopsOptions mapping;
  mapping.blockSize = options.gpuBlockSize;
  pm.addPass(createMapParallelLoops(mapping));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCheckHostResident());
  pm.addPass(createHostMemoryToGPU());
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createAlignWorkgroupMemory());
  pm.addPass(createKernelOccupancy());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
}

/// Kernels to NVVM and a GPU binary, then the host code to the LLVM
/// dialect: the passes and order of upstream's gpu-lower-to-nvvm-pipeline
/// (64-bit indices, no bare pointers), built here because its options have
/// no toolkit for gpu-module-to-binary.
void buildCUDALLVMStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(arith::createArithExpandOpsPass());
  // Both sides: to the LLVM dialect except gpu.module bodies' GPU ops.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions nvvmTarget;
  nvvmTarget.chip = options.gpuArch;
  nvvmTarget.features = options.gpuFeatures;
  nvvmTarget.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(nvvmTarget));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertIndexToLLVMPassOptions index;
  index.indexBitwidth = 64;
  pm.addPass(createConvertIndexToLLVMPass(index));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The kernels' GPU ops to NVVM (one nest per pass, as upstream's).
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // The host's launches, then the kernels compiled (ptxas and libdevice
  // from the toolkit) and embedded.
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.gpuBinaryFormat;
  binary.toolkitPath = options.cudaToolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void buildCPULLVMStage(OpPassManager &pm) {
  // Every heap allocation is checked (the runtime refuses one past the cap
  // on temporaries: the function frees what it holds and returns);
  // outermost parallel loops run on the library's thread pool, nested ones
  // sequentially (convert-scf-to-cf lowers them); heap memory comes from the
  // CPU runtime (which keeps large blocks for the next call); math functions
  // without an LLVM intrinsic call libm.
  pm.addPass(createCPUCheckAllocations());
  pm.addPass(createCPUParallel());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createConvertVectorToLLVMPass());
  FinalizeMemRefToLLVMConversionPassOptions memref;
  memref.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memref));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

} // namespace

void hector::buildStagePipeline(OpPassManager &pm, Target target, Stage stage,
                                const PipelineOptions &options) {
  switch (stage) {
  case Stage::HGraph:
    return buildHGraphStage(pm, options);
  case Stage::HTmpl:
    return buildHTmplStage(pm, options);
  case Stage::Loops:
    return buildLoopsStage(pm, target, options);
  case Stage::GPU:
    if (target == Target::CUDA)
      buildGPUStage(pm, options);
    return;
  case Stage::LLVM:
    if (target == Target::CUDA)
      return buildCUDALLVMStage(pm, options);
    return buildCPULLVMStage(pm);
  }
}

void hector::buildPipeline(OpPassManager &pm, Target target,
                           const PipelineOptions &options) {
  for (Stage stage :
       {Stage::HGraph, Stage::HTmpl, Stage::Loops, Stage::GPU, Stage::LLVM}) {
    if (static_cast<int>(stage) > static_cast<int>(options.lastStage.getValue()))
      break;
    // Entry points are fixed (and marked for their C interface) right after
    // the loops, before any lowering towards the target.
    if (stage == Stage::GPU)
      pm.addPass(createPrepareEntryPoints());
    buildStagePipeline(pm, target, stage, options);
  }
}

void hector::registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "hector-cpu-pipeline",
      "hectorc's lowering for the CPU target: hgraph functions to the LLVM "
      "dialect (or to the stage named by stop-after)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildPipeline(pm, Target::CPU, options);
      });
  PassPipelineRegistration<PipelineOptions>(
      "hector-cuda-pipeline",
      "hectorc's lowering for the CUDA target: hgraph functions to GPU "
      "kernels embedded in the LLVM dialect's host code (or to the stage "
      "named by stop-after)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildPipeline(pm, Target::CUDA, options);
      });
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

LogicalResult hector::runStage(ModuleOp module, Target target, Stage stage,
                               const PipelineOptions &options) {
  PassManager pm(module.getContext());
  buildStagePipeline(pm, target, stage, options);
  if (pm.size() == 0)
    return success();
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
    hector::registerPipelines();
  });
}

namespace hector {
#define GEN_PASS_REGISTRATION
#include "hector/Target/Passes.h.inc"
} // namespace hector

void hector::registerBackendPasses() { registerHectorTargetPasses(); }
