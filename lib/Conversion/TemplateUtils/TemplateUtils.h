//===- TemplateUtils.h - helpers shared by the htmpl lowerings --*- C++ -*-===//
//
// Index arithmetic, segment search, weight indexing and body inlining used by
// both htmpl-to-loops (CPU, simple GPU kernels) and htmpl-to-gpu (tiled GPU
// kernels), so that the two agree on the template semantics by construction.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_TEMPLATEUTILS_TEMPLATEUTILS_H
#define HECTOR_LIB_CONVERSION_TEMPLATEUTILS_TEMPLATEUTILS_H

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"

namespace hector::templates {

inline mlir::Value constIndex(mlir::OpBuilder &b, mlir::Location loc,
                              int64_t value) {
  return mlir::arith::ConstantIndexOp::create(b, loc, value);
}

/// Size of dimension `dim` of a memref: a constant when static.
mlir::Value dimOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value memref,
                  int64_t dim);

/// `list[pos]` of an i32/i64 index list, as an index.
mlir::Value loadIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value list,
                      mlir::Value pos);

/// Binary search over a non-decreasing offset table: the last t in
/// [0, count) with offsets[t] <= x (empty segments are skipped), or 0 when x
/// lies before every segment. Reads only offsets[1 .. count-1].
mlir::Value searchOffsets(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value offsets, mlir::Value count,
                          mlir::Value x);

/// The first m in [lo, hi) with !below(m) (hi when there is none), for a
/// predicate `below` that holds on a prefix of [lo, hi): a binary search.
mlir::Value lowerBound(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value lo, mlir::Value hi,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Value)> below);

/// How a GEMM weight operand is indexed: [T?][H?][K, N] or [N, K].
struct WeightIndexing {
  bool typed = false;      // leading type dimension (with segments)
  bool perHead = false;    // head dimension after the type dimension
  bool transposed = false; // the block is stored [N, K]
};

/// Indices of element (k, n) of head block h of slice t.
llvm::SmallVector<mlir::Value> weightIndices(const WeightIndexing &weight,
                                             mlir::Value t, mlir::Value h,
                                             mlir::Value k, mlir::Value n);

/// The row-dot epilogue of a row-mode GEMM (`row_dot(a) into(s)`) as a
/// loop nest at the builder's insertion point, which must follow the GEMM's
/// stores: s[i, 0] = Σ_n out[o(i), n] · a[t(i), n] for every row i inside a
/// segment (t = 0 without segments). The verifier guarantees that out[o(i)]
/// then holds exactly the row the GEMM computed (no accumulate, atomic or
/// row scale), so reading it back gives the fused epilogue's value. Does
/// nothing for a GEMM without the epilogue.
void emitRowDotLoops(mlir::OpBuilder &b, htmpl::GemmOp op);

/// Builds the body arguments of one traversal iteration (the edge or node
/// id, then one row per operand) from `rowOf`, computing each scheme at most
/// once and only for arguments the body uses (others get 0).
llvm::SmallVector<mlir::Value>
bodyArguments(mlir::OpBuilder &b, mlir::Location loc, htmpl::TraversalOp op,
              llvm::function_ref<mlir::Value(htmpl::AccessScheme)> rowOf);

/// Moves the traversal body to the rewriter's insertion point (which must be
/// before a terminator) with its block arguments replaced by `args`.
void inlineBody(mlir::RewriterBase &rewriter, htmpl::TraversalOp op,
                mlir::ValueRange args);

} // namespace hector::templates

#endif // HECTOR_LIB_CONVERSION_TEMPLATEUTILS_TEMPLATEUTILS_H
