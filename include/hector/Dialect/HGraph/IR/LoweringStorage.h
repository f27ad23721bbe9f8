//===- LoweringStorage.h - the memory hgraph-to-htmpl allocates --*- C++ -*-===//
//
// The lowering's (hgraph-to-htmpl) decisions about memory that passes over
// hgraph must know too: which readers need a row-wise value's rows in
// memory, which edge values are summed per (source, edge type) pair, which
// scores several readers share, and the scratch rows an op allocates. The
// lowering takes its decisions from here; hgraph-offload-scheduling's
// memory model counts the buffers they make. isStoredByLowering (HGraph.h)
// names the values stored whatever reads them.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_LOWERINGSTORAGE_H
#define HECTOR_DIALECT_HGRAPH_IR_LOWERINGSTORAGE_H

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace hector::hgraph {

/// Answers whether an edge-wise value is in memory one row per (source,
/// edge type) pair. The lowering knows (its stored values); a pass over
/// hgraph asks the materialization marks.
using CompactRowsQuery = llvm::function_ref<bool(mlir::Value)>;

/// True when the lowering forms (source, edge type) pairs in `func`: it has
/// compact-materialized values (the compaction pass judged pairs worth
/// forming), so per-edge sums into sources go through per-pair sums too.
bool pairsPay(FuncOp func);

/// True for a typed_linear read at an endpoint whose weight does not
/// depend on the edge type: stored one row per node (every edge of a node
/// shares its row) and read at the endpoint.
bool isStoredPerNode(TypedLinearOp op);

/// The typed_linear that `op` lowers with itself, or null: `aggregate sum
/// (typed_linear %W, %x from edge [transpose]) to src` where the
/// typed_linear is not compact and has no other use is one GEMM that adds
/// each row into its source node; the per-edge rows never reach memory.
TypedLinearOp scatteredLinear(AggregateOp op);

/// The scale `type_sum` sums over pairs, or null: `type_sum (scale %s, %c)`
/// into an edge-typed weight, with %s edge-wise and %c in compact rows, is
/// one GEMM over %s summed per pair and the pair rows of %c.
ScaleOp typeSumOverPairs(TypeSumOp op, CompactRowsQuery hasCompactRows);

/// True for a compact weight_grad `from src`: its gradient rows are summed
/// per pair before the outer products.
bool sumsGradPerPair(WeightGradOp op);

/// The ops whose lowering reads `edgeValue` summed per (source, edge type)
/// pair, [P, width], computed once for all of them and freed after the last:
/// compact weight gradients of it, per-type sums over pairs scaled by it,
/// and (where pairs pay: the function has compact values) scatters of a
/// typed_linear of it (the aggregate, which lowers the typed_linear).
llvm::SmallVector<mlir::Operation *, 2>
pairSumReaders(mlir::Value edgeValue, bool pairsPay,
               CompactRowsQuery hasCompactRows);

/// True when the lowering reads the operand of `use` only as its per-pair
/// sums (pairSumReaders), which the first of their readers computes: the
/// gradient of a compact weight_grad, the input of a scattered
/// typed_linear (where pairs pay), the scale of a scale only per-type sums
/// over pairs read.
bool readsPairSumsOnly(mlir::OpOperand &use, bool pairsPay,
                       CompactRowsQuery hasCompactRows);

/// True when the lowering reads the operand of `use` from rows in memory,
/// storing it first when it is row-wise: the input of a gather, and the
/// operands of a GEMM (typed_linear, weight_grad), except those read as pair
/// sums (pairSumReaders). Unlike the others, the lowering does not ask this:
/// it describes what its GEMMs and traversals do (nodeBuffer, edgeRows), and
/// bench/offload_model.py checks the two agree.
bool readsRowsInMemory(mlir::OpOperand &use, bool pairsPay);

/// True for the ops a traversal evaluates in its body from their operands:
/// those with the RowWise trait (element-wise math, dot, scale, slice,
/// zeros, dropout, the gradient helpers) whose result is a row value, not
/// a weight; gathers, typed vectors and the graph norms are read as leaves.
bool isRowWise(mlir::Operation *op);

/// The most row-wise ops one traversal evaluates in its body, and the most a
/// value read more than once may take. A larger expression is cut: some of
/// its values are stored by traversals of their own (rowsStoredByFusion),
/// so that every body, and the code LLVM compiles for it, stays small
/// (register allocation is superlinear in a block's length). The three
/// models' expressions have a fraction of either bound (at most 11 ops).
constexpr int64_t kMaxFusedOps = 96;
constexpr int64_t kMaxSharedOps = 24;
/// A per-edge scalar (one value per edge and head) read by several ops whose
/// evaluation loads at least this many values is stored once instead
/// (rowsStoredByFusion): its readers land in different traversals, some
/// walking pair order, where each of those loads is a scattered 32-byte
/// sector, and one stored value per edge is cheaper than evaluating it
/// again in each.
constexpr int64_t kMinLoadsOfSharedScalar = 3;

/// The row-wise values of `func` the lowering stores right after their
/// definition, by traversals of their own, instead of evaluating them in
/// their readers' traversals (its fusion plan), chosen in one pass in
/// program order. Each fused row-wise value keeps the set of row-wise ops
/// its evaluation emits (itself and its fused operands' sets, shared ops
/// once; at most kMaxFusedOps + 1 are kept). While that set is too large,
/// the operand with the largest set is stored instead. A value read more
/// than once is stored itself when its set exceeds kMaxSharedOps (its
/// readers may land in different traversals, which would each evaluate it
/// again: a gradient reads the recomputed forward chain back to front;
/// storing its values at intervals keeps every reader's expression short)
/// or when it is a per-edge scalar whose evaluation loads at least
/// kMinLoadsOfSharedScalar values (RGAT's and HGT's softmax-gradient
/// coefficient, [E, heads]). Linear in the number of ops: every set is
/// bounded by a constant.
llvm::DenseSet<mlir::Value> rowsStoredByFusion(FuncOp func);

/// True for a row-wise per-edge value of one column per head (a score, a
/// score's gradient) read by several ops, whose expression reduces wider
/// rows (a dot product) before the values `inMemory` says are stored:
/// stored once, [E, heads], it costs one pass; left row-wise, every reader's
/// traversal would re-read the wide rows to evaluate it again.
bool isSharedScore(mlir::Value value,
                   llvm::function_ref<bool(mlir::Value)> inMemory);

/// The per-destination maxima and sums an edge_softmax's lowering keeps
/// while it normalises: two node-wise buffers of this type each, freed once
/// the normalised value is stored.
FeatureType softmaxNodeScratch(EdgeSoftmaxOp op);

/// True for a weight_grad or a sum of weights whose only use is a sum of
/// weights: it is lowered there, its GEMMs accumulating into the outer
/// sum's buffer; it has none of its own. (A weight_outer may be written
/// into the sum's buffer too, sumWrittenInPlace; other terms are stored,
/// then added.)
bool isWrittenIntoSum(mlir::Operation *op);

/// The terms of the sum of weights `op` in the order the lowering writes
/// them into its buffer: the sums written into it (isWrittenIntoSum)
/// flattened, zeros left out, outer products first (the first one is
/// written in place, sumWrittenInPlace).
llvm::SmallVector<mlir::Value, 4> weightSumTerms(AddOp op);

/// The sum of weights whose buffer the weight_outer `op` is written into,
/// or null: an outer product that is the first term (weightSumTerms) of the
/// outermost sum it is a term of starts that sum's buffer (RGAT's `W_r b_r`
/// gradient) and has no buffer of its own; the sum then adds its other
/// terms to it.
AddOp sumWrittenInPlace(WeightOuterOp op);

} // namespace hector::hgraph

#endif // HECTOR_DIALECT_HGRAPH_IR_LOWERINGSTORAGE_H
