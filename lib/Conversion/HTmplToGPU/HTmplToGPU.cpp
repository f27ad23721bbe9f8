//===- HTmplToGPU.cpp - htmpl instances to GPU kernels ----------*- C++ -*-===//
//
// Placeholder until the GPU template lowering lands: fails on any htmpl
// instance.
//
//===----------------------------------------------------------------------===//

#include "hector/Conversion/Passes.h"

namespace hector {
#define GEN_PASS_DEF_HTMPLTOGPU
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {
struct HTmplToGPUPass : public hector::impl::HTmplToGPUBase<HTmplToGPUPass> {
  void runOnOperation() override {
    getOperation()->walk([&](Operation *op) {
      if (isa<hector::htmpl::GemmOp, hector::htmpl::TraversalOp>(op)) {
        op->emitError("htmpl-to-gpu is not implemented yet");
        signalPassFailure();
      }
    });
  }
};
} // namespace
