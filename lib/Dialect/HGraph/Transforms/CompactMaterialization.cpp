//===- CompactMaterialization.cpp - one row per (source, type) --*- C++ -*-===//
//
// Marks the edge-wise results of typed linear maps that depend only on the
// source node and the edge type as compact-materialized (BRIEF.md §3). The
// attribute is all that changes here: hgraph-to-htmpl turns a compact typed
// linear map into a GEMM over the unique (source, edge type) pairs and lets
// its consumers read the pair rows through `compact_map`.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/Transforms/Passes.h"

namespace hector {
#define GEN_PASS_DEF_COMPACTMATERIALIZATION
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using namespace hector::hgraph;

namespace {

bool isCompact(Operation *op) {
  auto attr = op->getAttrOfType<MaterializationAttr>(
      HGraphDialect::getMaterializationAttrName());
  return attr && attr.getValue() == Materialization::Compact;
}

/// Whether compacting the result of `op` saves GEMM rows. A node-typed or
/// single weight read at the source is already computed once per node
/// (fewer rows than pairs), so only edge-typed weights `from src`, and maps
/// `from edge` of a compact input, run one row per edge without compaction.
bool benefits(TypedLinearOp op) {
  if (!dependsOnlySourceAndEdgeType(op.getResult()))
    return false;
  auto weight = cast<WeightType>(op.getWeight().getType());
  switch (op.getFrom()) {
  case Endpoint::Src:
    return weight.getIndex() == WeightIndex::EdgeType;
  case Endpoint::Edge:
    return op.getInput().getDefiningOp() &&
           isCompact(op.getInput().getDefiningOp());
  default:
    return false;
  }
}

struct CompactMaterializationPass
    : public hector::impl::CompactMaterializationBase<
          CompactMaterializationPass> {
  using CompactMaterializationBase::CompactMaterializationBase;

  void runOnOperation() override {
    if (numEdges < 0 || numPairs < 0 || (numEdges > 0 && numPairs > numEdges)) {
      getOperation().emitError("hgraph-compact-materialization: need 0 <= "
                               "num-pairs <= num-edges, got num-pairs=")
          << static_cast<int64_t>(numPairs)
          << " num-edges=" << static_cast<int64_t>(numEdges);
      return signalPassFailure();
    }
    // Not worth an indirection per edge when nearly every edge is its own
    // pair.
    if (numEdges > 0 && numPairs > 0 &&
        static_cast<double>(numPairs) > maxRatio * static_cast<double>(numEdges))
      return;

    MLIRContext *ctx = &getContext();
    auto compact = MaterializationAttr::get(ctx, Materialization::Compact);
    // Operations come in dominance order, so an input is marked before the
    // maps that read it from edges.
    // An op that already says how it is materialized (vanilla included) is
    // left as it is.
    getOperation().walk([&](TypedLinearOp op) {
      if (!op->hasAttr(HGraphDialect::getMaterializationAttrName()) &&
          benefits(op))
        op->setAttr(HGraphDialect::getMaterializationAttrName(), compact);
    });
  }
};

} // namespace
