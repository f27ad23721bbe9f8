//===- HostMemoryToGPU.cpp - host buffers become device buffers -*- C++ -*-===//
//
// In a CUDA entry point every buffer is device memory: the caller passes
// device pointers, and temporaries between kernels must be device memory
// too. So host code's memref.alloc/dealloc/copy become their gpu.* forms.
//
// What remains wrong after that would only show at run time (a host load
// through a device pointer faults, a kernel reading a host stack address
// faults), so it is reported here, at the operation:
//  - host code (outside gpu.launch) that reads or writes a device buffer;
//  - a kernel that uses host stack or global memory (memref.alloca,
//    memref.get_global defined on the host).
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

namespace hector {
#define GEN_PASS_DEF_HOSTMEMORYTOGPU
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

/// The operation that made the buffer behind `v`, looking through views
/// (subview, cast, reshape, ...); null for block arguments.
Operation *bufferOrigin(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return def;
    v = view.getViewSource();
  }
  return nullptr;
}

/// Host-resident memory: the host stack and host globals. Everything else
/// reaching host code (arguments, allocations) is device memory here.
bool isHostMemory(Value v) {
  return isa_and_nonnull<memref::AllocaOp, memref::GetGlobalOp>(
      bufferOrigin(v));
}

bool insideKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

class HostMemoryToGPUPass
    : public hector::impl::HostMemoryToGPUBase<HostMemoryToGPUPass> {
public:
  using HostMemoryToGPUBase::HostMemoryToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(module.getContext());

    SmallVector<Operation *> hostOps;
    module.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op) &&
          !insideKernel(op))
        hostOps.push_back(op);
    });
    for (Operation *op : hostOps) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto gpuAlloc = gpu::AllocOp::create(
            rewriter, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), /*hostShared=*/false);
        rewriter.replaceOp(alloc, gpuAlloc.getMemref());
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(),
                               ValueRange(), dealloc.getMemref());
        rewriter.eraseOp(dealloc);
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        if (isHostMemory(copy.getSource()) || isHostMemory(copy.getTarget())) {
          copy.emitError("memref.copy between host and device memory is not "
                         "supported in a CUDA entry point");
          return signalPassFailure();
        }
        gpu::MemcpyOp::create(rewriter, loc, /*asyncToken=*/Type(),
                              ValueRange(), copy.getTarget(),
                              copy.getSource());
        rewriter.eraseOp(copy);
      }
    }

    bool failedCheck = false;
    module->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op)) {
        checkKernelOperands(cast<gpu::LaunchOp>(op), failedCheck);
        return WalkResult::skip();
      }
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      checkHostAccess(op, failedCheck);
      return WalkResult::advance();
    });
    if (failedCheck)
      signalPassFailure();
  }

private:
  /// Host code may only touch host stack/global buffers.
  static void checkHostAccess(Operation *op, bool &failedCheck) {
    if (isa_and_nonnull<gpu::GPUDialect>(op->getDialect()))
      return;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return;
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &effect : list) {
      if (!isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect()))
        continue;
      Value buffer = effect.getValue();
      if (!buffer || !isa<BaseMemRefType>(buffer.getType()) ||
          isHostMemory(buffer))
        continue;
      op->emitError("host code would access device memory here (in a CUDA "
                    "entry point every buffer lives on the GPU); move the "
                    "access into a parallel loop");
      failedCheck = true;
      return;
    }
  }

  /// Kernels may not use buffers that live on the host.
  static void checkKernelOperands(gpu::LaunchOp launch, bool &failedCheck) {
    launch.getBody().walk([&](Operation *op) {
      for (Value operand : op->getOperands()) {
        if (!isa<BaseMemRefType>(operand.getType()) ||
            launch.getBody().isAncestor(operand.getParentRegion()) ||
            !isHostMemory(operand))
          continue;
        op->emitError("a GPU kernel cannot use host memory (memref.alloca or "
                      "memref.get_global outside the kernel)");
        failedCheck = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
  }
};

} // namespace

