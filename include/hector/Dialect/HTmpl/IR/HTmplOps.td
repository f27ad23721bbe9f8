//===- HTmplOps.td - htmpl operations ----------------------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HTMPL_IR_HTMPLOPS_TD
#define HECTOR_DIALECT_HTMPL_IR_HTMPLOPS_TD

include "hector/Dialect/HTmpl/IR/HTmplAttrs.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def HTmpl_IndexList : MemRefRankOf<[I32, I64], [1]>;

//===----------------------------------------------------------------------===//
// GEMM template
//===----------------------------------------------------------------------===//

def HTmpl_GemmOp : HTmpl_Op<"gemm", [AttrSizedOperandSegments]> {
  let summary = "GEMM template instance: gather, per-type segments, scatter";
  let description = [{
    The rows of the instance are `i = 0 .. M-1`, where `M` is the length of
    `lhs_rows` when it is given and the number of rows of `lhs` otherwise.
    With `segments` (a `[T+1]` offset table, non-decreasing) row `i` belongs
    to type `t` when `segments[t] <= i < segments[t+1]` and uses weight slice
    `rhs[t]`; without it there is one weight. So typed weights are never
    replicated per row.

    **Row mode** (default), used by forward and input-gradient products:
    ```
    out[o(i), :] (+)= s(i) · lhs[l(i), :] · op(rhs[t(i)])
    ```
    where `l(i) = lhs_rows[i]` (gather) or `i`, `o(i) = out_rows[i]`
    (scatter) or `i`, `op` transposes the slice when `transpose_rhs` is set,
    `s(i)` is `row_scale[i]` (or, for a `[M, H]` row scale, `row_scale[i, k]`
    on output head block `k`) or 1, and `+=` applies with `accumulate`.
    `rhs` is `[K, N]`, or `[T, K, N]` with segments; one more leading `H`
    dimension after `T` (`[T, H, K/H, N/H]`) makes each slice block-diagonal
    per head.

    **Outer-product mode** (`transpose_lhs`), used by weight gradients:
    ```
    out[t] (+)= Σ_{i in segment t} s(i) · lhs[l(i), :]ᵀ ⊗ rhs[r(i), :]
    ```
    with `r(i) = rhs_rows[i]` or `i`; `out` has the weight's shape.

    **Row-dot epilogue** (`row_dot(%a) into(%s)`, row mode only): with
    `a` `[T, N]` (`[1, N]` without segments, row 0 used) and `s` `[M, H]`
    (`H` heads of `N / H` columns each; `H > 1` needs a static `N` that `H`
    divides),
    ```
    s[i, h] = Σ_{n in [h·N/H, (h+1)·N/H)} out[o(i), n] · a[t(i), n]
    ```
    for every instance row `i` that belongs to a segment (the others are
    left unspecified), where `out[o(i), :]` is the row the instance just
    computed, from the same fp32 accumulators it stores. It fuses a dot of
    the product with a per-type vector (RGAT's source score `a_r · z`) into
    the GEMM that produces `z` (one dot per head with several heads), so no
    later pass reads `z` for it. Because
    `s` must be the dot of the computed row alone, the epilogue takes no
    `accumulate`, `atomic` or `row_scale`, and no per-head weights.

    `atomic` makes every store an atomic add; it is needed when several
    producers write one output row (a scatter list, or outer products split
    over thread blocks). The schedule knobs are `tile` (`[m, n, k]` of a
    thread-block tile), `coarsen` (output elements per thread along `n`) and
    `launch_bounds` (threads per block).

    ```mlir
    htmpl.gemm lhs(%h : memref<?x64xf32>[%src : memref<?xi32>])
               rhs(%W : memref<?x64x64xf32>)
               out(%z : memref<?x64xf32>)
               segments(%seg : memref<?xi32>)
               row_dot(%a : memref<?x64xf32>) into(%s : memref<?x1xf32>)
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "", [MemRead]>:$lhs,
    Arg<AnyMemRef, "", [MemRead]>:$rhs,
    Arg<AnyMemRef, "", [MemRead, MemWrite]>:$out,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$lhs_rows,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$rhs_rows,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$out_rows,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$segments,
    Arg<Optional<AnyMemRef>, "", [MemRead]>:$row_scale,
    Arg<Optional<AnyMemRef>, "", [MemRead]>:$row_dot,
    Arg<Optional<AnyMemRef>, "", [MemWrite]>:$row_dot_into,
    UnitAttr:$transpose_lhs,
    UnitAttr:$transpose_rhs,
    UnitAttr:$accumulate,
    UnitAttr:$atomic,
    DefaultValuedAttr<DenseI64ArrayAttr, "{64, 64, 32}">:$tile,
    DefaultValuedAttr<I64Attr, "4">:$coarsen,
    DefaultValuedAttr<I64Attr, "256">:$launch_bounds
  );
  let assemblyFormat = [{
    `lhs` `(` $lhs `:` type($lhs) (`[` $lhs_rows^ `:` type($lhs_rows) `]`)? `)`
    `rhs` `(` $rhs `:` type($rhs) (`[` $rhs_rows^ `:` type($rhs_rows) `]`)? `)`
    `out` `(` $out `:` type($out) (`[` $out_rows^ `:` type($out_rows) `]`)? `)`
    (`segments` `(` $segments^ `:` type($segments) `)`)?
    (`row_scale` `(` $row_scale^ `:` type($row_scale) `)`)?
    (`row_dot` `(` $row_dot^ `:` type($row_dot) `)`
     `into` `(` $row_dot_into `:` type($row_dot_into) `)`)?
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True for the weight-gradient form (outer products summed per type).
    bool isOuterProduct() { return getTransposeLhs(); }
    /// True when each weight slice is block-diagonal over heads.
    bool isPerHead();
    /// Checks the row-dot epilogue against the output width `fullN`.
    ::mlir::LogicalResult verifyRowDot(std::optional<int64_t> fullN,
                                       ::mlir::Type element);
  }];
}

//===----------------------------------------------------------------------===//
// Traversal template
//===----------------------------------------------------------------------===//

def HTmpl_TraversalOp : HTmpl_Op<"traversal", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "traversal template instance: a loop nest over edges or nodes";
  let description = [{
    Runs the body once for every edge (`edges`) or every node (`nodes`) of the
    graph; the instances are independent except through
    `htmpl.accumulate`, so the loop may run in any order and in parallel.

    Edge traversals name their adjacency: `coo(src, dst, etype)`, edges in
    destination-sorted order; `csr(row_ptr, src, eid, etype)`, grouped by
    destination node (row `t` holds the incoming edges of node `t`); or
    `pairs(src, dst, etype, pair_eid)`, the canonical edges visited in the
    order of `pair_eid`, which groups them by their (source, edge type) pair,
    so that consecutive edges share their `compact` row (`src`, `dst` and
    `etype` are indexed by the edge id, as in `coo`). The adjacency fixes the iteration order and so which reductions can stay in a
    thread or warp before an atomic; it never changes the result.

    Every `ins`/`outs` operand carries an access scheme (`as src`, `as edge`,
    ...) that says which row the current edge or node reads or writes. The
    body's block arguments are the current edge or node id followed by that
    row index for each operand, in order (0 for `whole` operands). `compact`
    needs `compact_map` (edge → unique (source, type) pair), `ntype` needs
    `node_types`. Inner loops over heads and features are plain `scf.for`s in
    the body; loop-invariant statements sit outside them.

    ```mlir
    htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
        ins(%z : memref<?x64xf32> as edge) outs(%h : memref<?x64xf32> as dst) {
    ^bb0(%e: index, %rz: index, %rh: index):
      ...
      htmpl.accumulate add %v, %h[%rh, %f] : f32, memref<?x64xf32>
    }
    ```
  }];
  let arguments = (ins
    Arg<Variadic<HTmpl_IndexList>, "", [MemRead]>:$adjacency,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$compact_map,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$node_types,
    Variadic<AnyMemRef>:$inputs,
    Variadic<AnyMemRef>:$outputs,
    HTmpl_Domain:$domain,
    HTmpl_Adjacency:$adjacency_format,
    TypedArrayAttrBase<HTmpl_AccessSchemeAttr, "access schemes">:$schemes,
    DefaultValuedAttr<I64Attr, "256">:$launch_bounds
  );
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of graph index arrays an adjacency format needs.
    static unsigned getNumAdjacencyArrays(Adjacency format);
    /// The access scheme of `ins`/`outs` operand `index` (inputs first).
    AccessScheme getScheme(unsigned index);
    /// The block argument holding the row of `ins`/`outs` operand `index`.
    ::mlir::BlockArgument getRowArgument(unsigned index) {
      return getBody().getArgument(1 + index);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Edge softmax fused with its aggregation
//===----------------------------------------------------------------------===//

def HTmpl_SoftmaxAggregateOp : HTmpl_Op<"softmax_aggregate"> {
  let summary = "edge softmax and weighted sum over each destination's CSR row";
  let description = [{
    For every node `t` (the rows of `out`) and head `h` (the `H` columns of
    `scores`, `out` and `values` split into `H` equal blocks of `D`
    columns), over the incoming edges `e = eid[k]`,
    `k in [row_ptr[t], row_ptr[t+1])`:
    ```
    m       = max_k scores[e_k, h]
    α_e     = exp(scores[e, h] - m) / Σ_k exp(scores[e_k, h] - m)
    out[t, h·D + f] = Σ_k α_e · values[r(e), h·D + f]
    ```
    with `r(e) = value_rows[e]` (a compact map: the edge's (source, type)
    pair) or `e`. A node without incoming edges gets zeros. `out` is
    written, never read: no zero fill is needed and every row has one
    writer, so no atomics either.

    It is RGAT's and HGT's `aggregate sum (scale (edge_softmax s) z)` in one
    walk of each CSR row, with an online softmax: a running maximum `m`
    and sum `l` per head, the accumulated row rescaled by `exp(m_old -
    m_new)` when the maximum grows, and divided by `l` at the end. Every
    exponent is ≤ 0, so nothing overflows; the result equals the two-pass
    softmax up to rounding. `α` itself is never stored.

    ```mlir
    htmpl.softmax_aggregate csr(%row_ptr, %eid : memref<?xi32>, memref<?xi32>)
        scores(%s : memref<?x4xf32>)
        values(%z : memref<?x64xf32>[%compact_map : memref<?xi32>])
        out(%out : memref<?x64xf32>)
    ```
  }];
  let arguments = (ins
    Arg<HTmpl_IndexList, "", [MemRead]>:$row_ptr,
    Arg<HTmpl_IndexList, "", [MemRead]>:$eid,
    Arg<MemRefRankOf<[F32, F64], [2]>, "", [MemRead]>:$scores,
    Arg<MemRefRankOf<[F32, F64], [2]>, "", [MemRead]>:$values,
    Arg<Optional<HTmpl_IndexList>, "", [MemRead]>:$value_rows,
    Arg<MemRefRankOf<[F32, F64], [2]>, "", [MemWrite]>:$out,
    DefaultValuedAttr<I64Attr, "256">:$launch_bounds
  );
  let assemblyFormat = [{
    `csr` `(` $row_ptr `,` $eid `:` type($row_ptr) `,` type($eid) `)`
    `scores` `(` $scores `:` type($scores) `)`
    `values` `(` $values `:` type($values)
      (`[` $value_rows^ `:` type($value_rows) `]`)? `)`
    `out` `(` $out `:` type($out) `)`
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of heads (columns of `scores`).
    int64_t getHeads() {
      return ::llvm::cast<::mlir::MemRefType>(getScores().getType())
          .getDimSize(1);
    }
    /// Columns of `out` and `values`.
    int64_t getWidth() {
      return ::llvm::cast<::mlir::MemRefType>(getOut().getType())
          .getDimSize(1);
    }
  }];
}

def HTmpl_AccumulateOp : HTmpl_Op<"accumulate"> {
  let summary = "reduces a value into an element of a traversal output";
  let description = [{
    `dest[indices] = dest[indices] ⊕ value` with `⊕` = `add` or `max`, safe
    against the other instances of the enclosing traversal. The lowering
    reduces inside the thread and the warp first and issues one atomic per
    warp and destination row.
  }];
  let arguments = (ins AnyType:$value,
                       Arg<AnyMemRef, "", [MemRead, MemWrite]>:$dest,
                       Variadic<Index>:$indices,
                       HTmpl_Reduction:$kind);
  let assemblyFormat = [{
    $kind $value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,`
    type($dest)
  }];
  let hasVerifier = 1;
}

def HTmpl_YieldOp : HTmpl_Op<"yield", [
    Pure, HasParent<"TraversalOp">, ReturnLike, Terminator]> {
  let summary = "ends the body of a traversal";
  let assemblyFormat = "attr-dict";
}

#endif // HECTOR_DIALECT_HTMPL_IR_HTMPLOPS_TD
