//===- KernelOccupancy.cpp - blocks per SM for outlined kernels -*- C++ -*-===//
//
// htmpl-to-gpu can ask ptxas to keep a kernel's registers low enough for a
// number of resident blocks per SM (nvvm.minctasm, .minnctapersm in PTX):
// the asynchronously staged GEMM holds no staged tiles in registers, so
// more of its blocks can overlap their copies with each other's products.
// The request is made on the launch body's ops, because gpu.launch keeps no
// attributes through outlining; this pass moves it to the outlined kernel.
//
//===----------------------------------------------------------------------===//

#include "hector/Conversion/Passes.h"
#include "hector/Target/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hector {
#define GEN_PASS_DEF_KERNELOCCUPANCY
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

using hector::kMinBlocksPerSMAttr;

class KernelOccupancyPass
    : public hector::impl::KernelOccupancyBase<KernelOccupancyPass> {
public:
  using KernelOccupancyBase::KernelOccupancyBase;

  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](gpu::GPUFuncOp func) {
      int64_t blocks = 0;
      func.walk([&](Operation *op) {
        Attribute request = op->getAttr(kMinBlocksPerSMAttr);
        if (!request)
          return;
        auto count = dyn_cast<IntegerAttr>(request);
        if (!count || count.getInt() <= 0) {
          op->emitError("hector-kernel-occupancy: '")
              << kMinBlocksPerSMAttr << "' must be a positive integer, got "
              << request;
          failed = true;
          return;
        }
        blocks = std::max(blocks, count.getInt());
        op->removeAttr(kMinBlocksPerSMAttr);
      });
      if (blocks > 0 && func.isKernel())
        func->setAttr(
            NVVM::NVVMDialect::getMinctasmAttrName(),
            IntegerAttr::get(IntegerType::get(&getContext(), 32), blocks));
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
