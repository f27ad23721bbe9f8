//===- RowEvaluator.h - scalar code for hgraph row expressions --*- C++ -*-===//
//
// Part of the hgraph-to-htmpl lowering. Row-wise hgraph ops (element-wise
// math, dot, scale, slice, gather, typed_vector, relation_norm, degree_norm,
// zeros, the gradient helpers equal and leaky_relu_grad, dropout, and the
// normalising step of edge_softmax) are never materialized on their own:
// they are evaluated inside the body of the traversal that consumes them. A
// RowEvaluator first collects the buffers ("leaves") an expression reads, so
// that they become the traversal's operands, then emits the scalar code for
// one (head, feature) position inside the traversal body, each shared
// subexpression once.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_ROWEVALUATOR_H
#define HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_ROWEVALUATOR_H

#include "hector/Dialect/HGraph/IR/HGraph.h"
#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <tuple>

namespace hector::lowering {

/// A buffer and how the current edge or node of a traversal picks its row.
struct Leaf {
  mlir::Value memref;
  htmpl::AccessScheme scheme;
  bool operator==(const Leaf &other) const {
    return memref == other.memref && scheme == other.scheme;
  }
};

/// The edge_softmax result is evaluated from its materialized scores and the
/// per-destination max and sum: exp(score - max[dst]) / sum[dst].
struct SoftmaxParts {
  mlir::Value score, max, sum;
};

/// What the lowering knows about every hgraph value that lives in memory.
struct ValueStore {
  /// Node-wise values: [N, width] buffers.
  llvm::DenseMap<mlir::Value, mlir::Value> nodes;
  /// Edge-wise values: buffer plus `edge` / `compact` (or `src` / `dst` when
  /// the value is a node buffer read at an endpoint).
  llvm::DenseMap<mlir::Value, Leaf> edges;
  /// Weights: the memref argument.
  llvm::DenseMap<mlir::Value, mlir::Value> weights;
  /// Normalised edge_softmax results.
  llvm::DenseMap<mlir::Value, SoftmaxParts> softmaxes;
  /// The `edge_norm` graph array (for hgraph.relation_norm).
  mlir::Value edgeNorm;
  /// The `csr_row_ptr` graph array (in-degrees, for hgraph.degree_norm).
  mlir::Value csrRowPtr;
  /// The `edge_perm` graph array (the caller's edge index, which
  /// hgraph.dropout's mask hashes).
  mlir::Value edgePerm;
  /// Seeds: their memref<1xi64> argument.
  llvm::DenseMap<mlir::Value, mlir::Value> seeds;
};

/// Emits the scalar computation of row expressions in one traversal body.
///
/// Row expressions are DAGs: a value may be read by many ops (autodiff
/// reads every forward value twice or more, `add %v, %v` doubles a chain).
/// Every walk here is iterative (no recursion proportional to the program's
/// length) and visits each value once: `collect` and the per-head hoisting
/// keep visited sets, and `emit` memoizes each value per (head, feature) and
/// per block, so a shared subexpression is emitted once where every later
/// reader can see it (its block or an enclosing one), never re-expanded.
class RowEvaluator {
public:
  RowEvaluator(const ValueStore &store, bool edgeDomain)
      : store(store), edgeDomain(edgeDomain) {}

  /// Records every leaf `value` reads. Returns null on success, else the
  /// value that is neither in memory nor computable row by row here.
  mlir::Value collect(mlir::Value value);
  /// Adds an input leaf (deduplicated); returns its index.
  unsigned addLeaf(Leaf leaf);
  /// Adds an output leaf (never shared with an input); returns its index.
  unsigned addOutput(Leaf leaf) {
    leaves.push_back(leaf);
    return leaves.size() - 1;
  }
  llvm::ArrayRef<Leaf> getLeaves() const { return leaves; }

  /// Binds the traversal body: `rows[k]` is the row index of leaf k.
  void bind(mlir::ValueRange rows) { rowArgs.assign(rows.begin(), rows.end()); }

  /// Emits the per-head subexpressions of `value` at the current insertion
  /// point, so that a feature loop created afterwards only reads them.
  void hoistPerHead(mlir::OpBuilder &b, mlir::Value value, mlir::Value head);
  /// Emits `value` at head `head`, feature `feature` of its head block
  /// (`feature` is ignored for per-head values, `head` for values with one
  /// head).
  mlir::Value emit(mlir::OpBuilder &b, mlir::Value value, mlir::Value head,
                   mlir::Value feature);
  /// Loads leaf `leaf` at column `column` (rank-1 leaves ignore it).
  mlir::Value load(mlir::OpBuilder &b, unsigned leaf, mlir::Value column);
  /// The row index of leaf `leaf` in the current iteration.
  mlir::Value row(unsigned leaf) const { return rowArgs[leaf]; }
  /// Column of (head, feature) in a value of `type`: per-head values have one
  /// column per head (or one for all), others `head * headWidth + feature`.
  static mlir::Value column(mlir::OpBuilder &b, hgraph::FeatureType type,
                            mlir::Value head, mlir::Value feature);

private:
  /// One evaluation of a value: at a head and a feature, normalized so that
  /// equal evaluations compare equal (null feature for per-head values,
  /// null head for values with one head).
  struct Request {
    mlir::Value value, head, feature;
  };
  struct Frame;
  using Key = std::tuple<mlir::Value, mlir::Value, mlir::Value, mlir::Block *>;

  static Request normalize(mlir::Value value, mlir::Value head,
                           mlir::Value feature);
  /// The leaf a value reads directly, if it is in memory.
  std::optional<Leaf> leafOf(mlir::Value value) const;
  unsigned leafIndex(Leaf leaf) const;
  /// The per-head values `value` reads through values that are not per-head
  /// (itself, if it is per-head), each once, operands first.
  llvm::SmallVector<mlir::Value> perHeadInputs(mlir::Value value) const;
  /// The value emitted for `request` in `block` or a block enclosing it.
  mlir::Value lookup(const Request &request, mlir::Block *block) const;
  /// `offset + feature` (or the constant `offset`), one SSA value per pair
  /// where it is visible, so that slices at one offset share evaluations.
  mlir::Value offsetColumn(mlir::OpBuilder &b, mlir::Location loc,
                           int64_t offset, mlir::Value feature);
  /// Emits a leaf or a normalised softmax; null if `request` is neither.
  mlir::Value emitMemory(mlir::OpBuilder &b, const Request &request);
  /// Emits hgraph.dropout of the evaluated `input` at `request`'s column.
  mlir::Value emitDropout(mlir::OpBuilder &b, hgraph::DropoutOp op,
                          const Request &request, mlir::Value input);
  /// Emits the op of `request` from its evaluated operands.
  mlir::Value emitOp(mlir::OpBuilder &b, mlir::Operation *op,
                     llvm::ArrayRef<mlir::Value> operands);

  const ValueStore &store;
  bool edgeDomain;
  /// A traversal reads a handful of buffers: a vector beats a set here.
  llvm::SmallVector<Leaf> leaves;
  llvm::SmallVector<mlir::Value> rowArgs;
  /// Values whose leaves `collect` has recorded.
  llvm::DenseSet<mlir::Value> collected;
  /// (value, head, feature, block) -> the value emitted there.
  llvm::DenseMap<Key, mlir::Value> emitted;
  /// (seed buffer, traversal body) -> hgraph.dropout's keys k1, k2 there.
  llvm::DenseMap<std::pair<mlir::Value, mlir::Block *>,
                 std::pair<mlir::Value, mlir::Value>>
      seedKeys;
  /// (traversal body, width W) -> n·W of the current edge (hgraph.dropout).
  llvm::DenseMap<std::pair<mlir::Block *, int64_t>, mlir::Value> edgeCounters;
  /// (feature, offset, block) -> offsetColumn's value there.
  llvm::DenseMap<std::tuple<mlir::Value, int64_t, mlir::Block *>, mlir::Value>
      columns;
};

/// True when `type` holds one value per head (width == heads).
inline bool isPerHead(hgraph::FeatureType type) {
  return type.getWidth() == type.getHeads();
}

} // namespace hector::lowering

#endif // HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_ROWEVALUATOR_H
