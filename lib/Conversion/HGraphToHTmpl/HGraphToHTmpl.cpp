//===- HGraphToHTmpl.cpp - hgraph to htmpl instances -----*- C++ -*-===//
//
// Placeholder until the lowering lands: fails on any hgraph function.
//
//===----------------------------------------------------------------------===//

#include "hector/Conversion/Passes.h"
#include "hector/Dialect/HGraph/IR/HGraph.h"

namespace hector {
#define GEN_PASS_DEF_HGRAPHTOHTMPL
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {
struct HGraphToHTmplPass
    : public hector::impl::HGraphToHTmplBase<HGraphToHTmplPass> {
  void runOnOperation() override {
    getOperation()->walk([&](Operation *op) {
      if (isa<hector::hgraph::FuncOp>(op)) {
        op->emitError("hgraph-to-htmpl is not implemented yet");
        signalPassFailure();
      }
    });
  }
};
} // namespace
