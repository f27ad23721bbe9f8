//===- HTmplToGPU.cpp - htmpl instances to GPU kernels ----------*- C++ -*-===//
//
// The htmpl-to-gpu pass: every htmpl.gemm becomes a shared-memory tiled GEMM
// launch (GemmToGPU.cpp; GemmTensorCore.cpp multiplies on tensor cores with
// precision=tf32) and every htmpl.traversal a launch that puts
// features on the lanes of a warp or instances on threads
// (TraversalToGPU.cpp; TraversalPlan.cpp chooses the mapping, WarpBody.cpp
// rewrites the body for the lanes), and every htmpl.softmax_aggregate one
// warp per destination (SoftmaxAggregateToGPU.cpp). The launches sit in the
// host function where the instances were; gpu-kernel-outlining turns them
// into kernels.
// docs/gpu-templates.md explains the designs.
//
//===----------------------------------------------------------------------===//

#include "GPULowering.h"

#include "hector/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace hector {
#define GEN_PASS_DEF_HTMPLTOGPU
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {
struct HTmplToGPUPass : public hector::impl::HTmplToGPUBase<HTmplToGPUPass> {
  using HTmplToGPUBase::HTmplToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t lanes = lanesPerInstance;
    if (lanes < 0 || lanes > hector::gpu::kWarpSize || (lanes & (lanes - 1))) {
      module.emitError("htmpl-to-gpu: lanes-per-instance must be 0 or a power "
                       "of two from 1 to 32, got ")
          << lanes;
      return signalPassFailure();
    }
    std::optional<hector::gpu::GemmPrecision> gemmPrecision =
        llvm::StringSwitch<std::optional<hector::gpu::GemmPrecision>>(precision)
            .Case("fp32", hector::gpu::GemmPrecision::FP32)
            .Case("tf32", hector::gpu::GemmPrecision::TF32)
            .Default(std::nullopt);
    if (!gemmPrecision) {
      module.emitError("htmpl-to-gpu: precision must be fp32 or tf32, got '")
          << precision << "'";
      return signalPassFailure();
    }
    if (gemmStaging != "async" && gemmStaging != "registers") {
      module.emitError("htmpl-to-gpu: gemm-staging must be async or "
                       "registers, got '")
          << gemmStaging << "'";
      return signalPassFailure();
    }
    int64_t blocksPerSM = gemmBlocksPerSM;
    if (blocksPerSM < 0 || blocksPerSM > 32) {
      module.emitError("htmpl-to-gpu: gemm-blocks-per-sm must be 0 to 32, "
                       "got ")
          << blocksPerSM;
      return signalPassFailure();
    }
    hector::gpu::GemmOptions gemmOptions{*gemmPrecision,
                                         gemmStaging == "async",
                                         blocksPerSM};
    // Check everything first so that a failure leaves the IR untouched.
    SmallVector<Operation *> instances;
    bool valid = true;
    // Pre-order, not entering traversal bodies: an instance nested in a
    // traversal is reported by the traversal's check.
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto gemm = dyn_cast<htmpl::GemmOp>(op)) {
        valid &= succeeded(hector::gpu::checkGemm(gemm));
        instances.push_back(op);
      } else if (auto traversal = dyn_cast<htmpl::TraversalOp>(op)) {
        valid &= succeeded(hector::gpu::checkTraversal(traversal, lanes));
        instances.push_back(op);
        return WalkResult::skip();
      } else if (isa<htmpl::SoftmaxAggregateOp>(op)) {
        instances.push_back(op);
      }
      return WalkResult::advance();
    });
    if (!valid)
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    for (Operation *op : instances) {
      if (auto gemm = dyn_cast<htmpl::GemmOp>(op))
        hector::gpu::lowerGemm(rewriter, gemm, gemmOptions);
      else if (auto fused = dyn_cast<htmpl::SoftmaxAggregateOp>(op))
        hector::gpu::lowerSoftmaxAggregate(rewriter, fused);
      else
        hector::gpu::lowerTraversal(rewriter, cast<htmpl::TraversalOp>(op),
                                    lanes);
    }
  }
};
} // namespace
