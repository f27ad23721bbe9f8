//===- HTmplToLoops.cpp - htmpl instances to parallel loops -----*- C++ -*-===//
//
// Placeholder until the loop lowering lands: fails on any htmpl instance.
//
//===----------------------------------------------------------------------===//

#include "hector/Conversion/Passes.h"

namespace hector {
#define GEN_PASS_DEF_HTMPLTOLOOPS
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {
struct HTmplToLoopsPass
    : public hector::impl::HTmplToLoopsBase<HTmplToLoopsPass> {
  void runOnOperation() override {
    getOperation()->walk([&](Operation *op) {
      if (isa<hector::htmpl::GemmOp, hector::htmpl::TraversalOp>(op)) {
        op->emitError("htmpl-to-loops is not implemented yet");
        signalPassFailure();
      }
    });
  }
};
} // namespace
