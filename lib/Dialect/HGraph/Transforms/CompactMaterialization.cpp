//===- CompactMaterialization.cpp - one row per (source, type) --*- C++ -*-===//
//
// Marks the edge-wise results of typed linear maps that depend only on the
// source node and the edge type as compact-materialized (BRIEF.md §3). The
// attribute is all that changes here: hgraph-to-htmpl turns a compact typed
// linear map into a GEMM over the unique (source, edge type) pairs and lets
// its consumers read the pair rows through `compact_map`. The same holds in
// the backward for weight gradients `from src` of edge-typed weights: a
// compact one sums its gradient rows per pair, then runs its outer-product
// GEMM over the pairs.
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

/// Whether compacting the result of `op` saves GEMM rows. A node-typed or
/// single weight read at the source is already computed once per node
/// (fewer rows than pairs), so only edge-typed weights `from src`, and maps
/// `from edge` of a compact input, run one row per edge without compaction.
bool benefits(TypedLinearOp op) {
  // The cheap conditions first: the dependence walk below stops at an input
  // marked compact, so each call is short (a chain of maps from edges that
  // do not qualify would otherwise be walked once per map).
  auto weight = cast<WeightType>(op.getWeight().getType());
  switch (op.getFrom()) {
  case Endpoint::Src:
    if (weight.getIndex() != WeightIndex::EdgeType)
      return false;
    break;
  case Endpoint::Edge:
    if (!isMarkedCompact(op.getInput().getDefiningOp()))
      return false;
    break;
  default:
    return false;
  }
  return dependsOnlySourceAndEdgeType(op.getResult());
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
    // maps that read it from edges. An op that already says how it is
    // materialized (vanilla included) is left as it is.
    getOperation().walk([&](TypedLinearOp op) {
      if (!op->hasAttr(HGraphDialect::getMaterializationAttrName()) &&
          benefits(op))
        op->setAttr(HGraphDialect::getMaterializationAttrName(), compact);
    });
    getOperation().walk([&](WeightGradOp op) {
      auto weight = cast<WeightType>(op.getType());
      if (!op->hasAttr(HGraphDialect::getMaterializationAttrName()) &&
          op.getFrom() == Endpoint::Src &&
          weight.getIndex() == WeightIndex::EdgeType)
        op->setAttr(HGraphDialect::getMaterializationAttrName(), compact);
    });
    handOverSavedValues(compact);
  }

private:
  /// A training forward hands its saved values to the backward of the same
  /// primal (docs/compilation.md). One now stored per pair is handed over
  /// per pair, [P, width] instead of [E, width]: the result of the forward
  /// and the argument of the backward of that name become compact.
  void handOverSavedValues(MaterializationAttr compact) {
    StringRef attrName = HGraphDialect::getMaterializationAttrName();
    auto stringAttr = [](Operation *op, StringRef name) {
      auto attr = op->getAttrOfType<StringAttr>(name);
      return attr ? attr.getValue() : StringRef();
    };
    // Attribute dictionaries are rewritten once per function (setting them
    // one at a time rebuilds the whole list each time: quadratic).
    auto withCompact = [&](DictionaryAttr dict) {
      NamedAttrList entries(dict);
      entries.set(attrName, compact);
      return entries.getDictionary(compact.getContext());
    };
    SmallVector<FuncOp> functions(getOperation().getOps<FuncOp>());
    for (FuncOp forward : functions) {
      if (stringAttr(forward, "hgraph.kind") != "training_forward")
        continue;
      auto ret = cast<ReturnOp>(forward.getBody().front().getTerminator());
      SmallVector<DictionaryAttr> results;
      forward.getAllResultAttrs(results);
      llvm::DenseSet<StringAttr> handedOver;
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        DictionaryAttr dict = results[index];
        auto role = dict ? dict.getAs<StringAttr>("hgraph.role") : nullptr;
        auto name = dict ? dict.getAs<StringAttr>("hgraph.name") : nullptr;
        Operation *def = value.getDefiningOp();
        if (!role || role.getValue() != "saved" || !name ||
            dict.get(attrName) || !isMarkedCompact(def))
          continue;
        results[index] = withCompact(dict);
        handedOver.insert(name);
      }
      if (handedOver.empty())
        continue;
      forward.setAllResultAttrs(results);
      for (FuncOp backward : functions) {
        if (stringAttr(backward, "hgraph.kind") != "training_backward" ||
            stringAttr(backward, "hgraph.primal") !=
                stringAttr(forward, "hgraph.primal"))
          continue;
        SmallVector<DictionaryAttr> args;
        backward.getAllArgAttrs(args);
        for (DictionaryAttr &dict : args)
          if (auto name = dict ? dict.getAs<StringAttr>("hgraph.name")
                               : nullptr;
              name && handedOver.contains(name))
            dict = withCompact(dict);
        backward.setAllArgAttrs(args);
      }
    }
  }
};

} // namespace
