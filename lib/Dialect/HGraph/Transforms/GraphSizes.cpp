//===- GraphSizes.cpp - counts symbolic in the graph's sizes -----*- C++ -*-===//

#include "hector/Dialect/HGraph/Transforms/GraphSizes.h"

using namespace mlir;

namespace hector::hgraph::graph_sizes {

namespace {
/// Defaults when a pass is not told the graph (docs/optimizations.md): a
/// mid-sized graph with the median edges-per-node ratio of the benchmark
/// datasets (BRIEF.md §5: 5.5 to 51, median about 7), half as many unique
/// (source, type) pairs as edges (am 0.57, fb15k 0.26), 100 edge types and
/// 5 node types.
constexpr double kDefaultNodes = 100000, kDefaultEdgesPerNode = 7,
                 kDefaultPairRatio = 0.5, kDefaultEdgeTypes = 100,
                 kDefaultNodeTypes = 5;
} // namespace

void Count::print(llvm::raw_ostream &os) const {
  static const char *names[NumSymbols] = {"N", "E", "P", "R", "T"};
  bool first = true;
  for (unsigned i = 0; i < NumSymbols; ++i) {
    if (terms[i] == 0)
      continue;
    os << (first ? "" : " + ") << static_cast<int64_t>(terms[i]) << "*"
       << names[i];
    first = false;
  }
  if (constant != 0 || first)
    os << (first ? "" : " + ") << static_cast<int64_t>(constant);
}

std::optional<Sizes> resolve(Operation *anchor, StringRef pass, int64_t nodes,
                             int64_t edges, int64_t pairs, int64_t edgeTypes,
                             int64_t nodeTypes) {
  int64_t given[NumSymbols] = {nodes, edges, pairs, edgeTypes, nodeTypes};
  for (int64_t size : given)
    if (size < 0) {
      anchor->emitError() << pass << ": graph sizes must be non-negative";
      return std::nullopt;
    }
  auto orDefault = [](int64_t size, double fallback) {
    return size > 0 ? static_cast<double>(size) : fallback;
  };
  Sizes sizes;
  sizes[N] = orDefault(given[N], kDefaultNodes);
  sizes[E] = orDefault(given[E], kDefaultEdgesPerNode * sizes[N]);
  sizes[P] = orDefault(given[P], kDefaultPairRatio * sizes[E]);
  sizes[R] = orDefault(given[R], kDefaultEdgeTypes);
  sizes[T] = orDefault(given[T], kDefaultNodeTypes);
  return sizes;
}

Symbol rowsOf(Value value) {
  if (!cast<FeatureType>(value.getType()).isEdgeWise())
    return N;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<FuncOp>(arg.getOwner()->getParentOp());
    auto attr = func ? func.getArgAttrOfType<MaterializationAttr>(
                           arg.getArgNumber(),
                           HGraphDialect::getMaterializationAttrName())
                     : MaterializationAttr();
    return attr && attr.getValue() == Materialization::Compact ? P : E;
  }
  return isMarkedCompact(value.getDefiningOp()) ? P : E;
}

} // namespace hector::hgraph::graph_sizes
