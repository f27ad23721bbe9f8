//===- GraphSizes.h - counts symbolic in the graph's sizes -------*- C++ -*-===//
//
// The hgraph passes that weigh alternatives (linear reordering, offload
// scheduling) count work and bytes as linear forms in the graph's sizes: N
// nodes, E edges, P unique (source, edge type) pairs, R edge types, T node
// types. Every operator's count is rows times work per row, or types times
// work per type, so a constant plus one coefficient per symbol is exact.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HGRAPH_TRANSFORMS_GRAPHSIZES_H
#define HECTOR_DIALECT_HGRAPH_TRANSFORMS_GRAPHSIZES_H

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "llvm/Support/raw_ostream.h"

#include <array>
#include <optional>

namespace hector::hgraph::graph_sizes {

enum Symbol { N, E, P, R, T, NumSymbols };
using Sizes = std::array<double, NumSymbols>;

/// A count: a constant plus one coefficient per symbol.
struct Count {
  double constant = 0;
  std::array<double, NumSymbols> terms{};

  static Count of(std::optional<Symbol> symbol, double count) {
    Count result;
    if (symbol)
      result.terms[*symbol] = count;
    else
      result.constant = count;
    return result;
  }
  Count &operator+=(const Count &other) {
    constant += other.constant;
    for (unsigned i = 0; i < NumSymbols; ++i)
      terms[i] += other.terms[i];
    return *this;
  }
  double at(const Sizes &sizes) const {
    double total = constant;
    for (unsigned i = 0; i < NumSymbols; ++i)
      total += terms[i] * sizes[i];
    return total;
  }
  /// Prints e.g. `256*E + 4096`.
  void print(llvm::raw_ostream &os) const;
};

/// The sizes to evaluate counts at: the given ones, defaults where a size is
/// 0 (docs/optimizations.md: a mid-sized graph with the benchmark datasets'
/// median edges per node). Emits an error on `anchor` and returns nothing
/// when a size is negative.
std::optional<Sizes> resolve(mlir::Operation *anchor, llvm::StringRef pass,
                             int64_t nodes, int64_t edges, int64_t pairs,
                             int64_t edgeTypes, int64_t nodeTypes);

/// How many rows a node-wise or edge-wise value has: N, or E (P when its
/// producer or its argument attributes say compact).
Symbol rowsOf(mlir::Value value);

} // namespace hector::hgraph::graph_sizes

#endif // HECTOR_DIALECT_HGRAPH_TRANSFORMS_GRAPHSIZES_H
