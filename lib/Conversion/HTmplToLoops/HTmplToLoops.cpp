//===- HTmplToLoops.cpp - htmpl instances to parallel loops -----*- C++ -*-===//
//
// The htmpl-to-loops pass: every htmpl.gemm, htmpl.traversal and
// htmpl.softmax_aggregate becomes an scf.parallel loop nest (inner loops as
// scf.for) over the same memrefs, with arith bodies and memref.atomic_rmw
// where instances may write one element concurrently. GemmToLoops.cpp,
// TraversalToLoops.cpp and SoftmaxAggregateToLoops.cpp hold the lowerings;
// LoopLowering.h states the rules they share.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "hector/Conversion/Passes.h"

namespace hector {
#define GEN_PASS_DEF_HTMPLTOLOOPS
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {
struct HTmplToLoopsPass
    : public hector::impl::HTmplToLoopsBase<HTmplToLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Check everything first so that a failure leaves the IR untouched.
    bool valid = true;
    module.walk([&](htmpl::TraversalOp op) {
      valid &= succeeded(loops::checkTraversal(op));
    });
    if (!valid)
      return signalPassFailure();

    // Post-order: a traversal nested in another one is lowered first.
    SmallVector<Operation *> instances;
    module.walk([&](Operation *op) {
      if (isa<htmpl::GemmOp, htmpl::TraversalOp, htmpl::SoftmaxAggregateOp>(
              op))
        instances.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : instances) {
      if (auto gemm = dyn_cast<htmpl::GemmOp>(op))
        loops::lowerGemm(rewriter, gemm);
      else if (auto fused = dyn_cast<htmpl::SoftmaxAggregateOp>(op))
        loops::lowerSoftmaxAggregate(rewriter, fused);
      else
        loops::lowerTraversal(rewriter, cast<htmpl::TraversalOp>(op));
    }
  }
};
} // namespace
