//===- GemmToLoops.cpp - htmpl.gemm to parallel loops -----------*- C++ -*-===//
//
// Row mode: one scf.parallel over the instance rows i (the big dimension,
// outermost); inside it the gather/scatter rows and the row's type are
// resolved once, then a nested scf.parallel over the output columns n runs the
// dot product over k as an scf.for. With segments, the type of row i is found
// by a binary search over the [T+1] offset table: the row loop stays one
// rectangular loop whose bound is a memref size (an outer loop over types
// would give the inner loop data-dependent bounds, which neither the GPU
// mapping nor a host-side launch can use).
//
// Outer-product mode: an scf.parallel over the weight rows (t, h, k) with a
// nested scf.parallel over the columns n; each (t, h, k, n) sums its
// segment's rows in an scf.for, so no two iterations write one element and
// no atomics are needed.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace hector;
using namespace hector::htmpl;
using hector::loops::constIndex;
using hector::loops::dimOf;
using hector::loops::loadIndex;
using hector::loops::searchOffsets;
using hector::loops::weightIndices;

namespace {
/// Where the [K, N] blocks of a weight-shaped operand live: rhs in row mode,
/// out in outer-product mode. Its dims are [T]? [H]? then the block.
struct WeightLayout : templates::WeightIndexing {
  Value weight;
  Value heads;             // H, or 1
  Value k, n;              // block sizes along the reduction and output
};

WeightLayout getWeightLayout(OpBuilder &b, Location loc, Value weight,
                             bool typed, bool transposed) {
  WeightLayout layout;
  layout.weight = weight;
  layout.typed = typed;
  layout.transposed = transposed;
  int64_t rank = cast<MemRefType>(weight.getType()).getRank();
  layout.perHead = rank == (typed ? 4 : 3);
  layout.heads = layout.perHead ? dimOf(b, loc, weight, typed ? 1 : 0)
                                : constIndex(b, loc, 1);
  int64_t kDim = rank - 2, nDim = rank - 1;
  if (transposed)
    std::swap(kDim, nDim);
  layout.k = dimOf(b, loc, weight, kDim);
  layout.n = dimOf(b, loc, weight, nDim);
  return layout;
}

Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

/// The per-row scalar of row i on output column n (full width), or null.
/// `block` is the column width of one row_scale head (only for [M, H]).
Value rowScaleAt(OpBuilder &b, Location loc, Value scale, Value block, Value i,
                 Value n) {
  if (!scale)
    return {};
  if (cast<MemRefType>(scale.getType()).getRank() == 1)
    return memref::LoadOp::create(b, loc, scale, i);
  Value head = arith::DivUIOp::create(b, loc, n, block);
  return memref::LoadOp::create(b, loc, scale, ValueRange{i, head});
}

/// Column width of one row_scale head block: fullN / H_scale, or null.
Value rowScaleBlock(OpBuilder &b, Location loc, Value scale, Value fullN) {
  if (!scale || cast<MemRefType>(scale.getType()).getRank() != 2)
    return {};
  return b.createOrFold<arith::DivUIOp>(loc, fullN, dimOf(b, loc, scale, 1));
}

/// Builds the row-mode nest
///   scf.parallel (%i) = (0) to (rows) { rowBody(i)
///     scf.parallel (%n) = (0) to (width) { columnBody(i, t, n) } }
/// where columnBody only runs for rows that belong to a type (every row
/// without segments, t null). The type search and the guard sit where the GPU
/// mapping can still turn the column loop into threads: the search before
/// it, the guard inside it. Leaves the insertion point after the nest.
void forEachRowAndColumn(OpBuilder &b, Location loc, Value rows, Value segments,
                         Value width, function_ref<void(Value)> rowBody,
                         function_ref<void(Value, Value, Value)> columnBody) {
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  auto rowLoop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                         ValueRange{rows}, ValueRange{c1});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  Value i = rowLoop.getInductionVars()[0];
  Value t, inside;
  if (segments) {
    // Rows outside [segments[0], segments[T]) have no weight: skip them.
    // The search stays in bounds for them, so it can run unguarded.
    Value numTypes =
        b.createOrFold<arith::SubIOp>(loc, dimOf(b, loc, segments, 0), c1);
    Value first = loadIndex(b, loc, segments, c0);
    Value last = loadIndex(b, loc, segments, numTypes);
    Value afterFirst =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, first, i);
    Value beforeLast =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, last);
    inside = arith::AndIOp::create(b, loc, afterFirst, beforeLast);
    t = searchOffsets(b, loc, segments, numTypes, i);
  }
  rowBody(i);
  auto columnLoop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                            ValueRange{width}, ValueRange{c1});
  b.setInsertionPointToStart(columnLoop.getBody());
  if (inside) {
    auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
  }
  columnBody(i, t, columnLoop.getInductionVars()[0]);
}

void lowerRowGemm(OpBuilder &b, GemmOp op) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), out = op.getOut(), segments = op.getSegments(),
        lhsRows = op.getLhsRows(), outRows = op.getOutRows(),
        scale = op.getRowScale();
  Type element = cast<MemRefType>(lhs.getType()).getElementType();
  WeightLayout w = getWeightLayout(b, loc, op.getRhs(), segments != nullptr,
                                   op.getTransposeRhs());
  Value fullN = b.createOrFold<arith::MulIOp>(loc, w.heads, w.n);
  Value rows = lhsRows ? dimOf(b, loc, lhsRows, 0) : dimOf(b, loc, lhs, 0);
  Value scaleBlock = rowScaleBlock(b, loc, scale, fullN);
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);

  auto outRow = [&](OpBuilder &b, Value i) {
    return outRows ? loadIndex(b, loc, outRows, i) : i;
  };

  // Atomic stores without `accumulate` overwrite each scattered row with the
  // sum of its producers: clear those rows first, then add atomically.
  bool atomic = op.getAtomic();
  if (atomic && !op.getAccumulate()) {
    Value zero = zeroOf(b, loc, element);
    Value o;
    forEachRowAndColumn(
        b, loc, rows, segments, fullN, [&](Value i) { o = outRow(b, i); },
        [&](Value, Value, Value n) {
          memref::StoreOp::create(b, loc, zero, out, ValueRange{o, n});
        });
  }

  Value l, o;
  auto rowBody = [&](Value i) {
    l = lhsRows ? loadIndex(b, loc, lhsRows, i) : i;
    o = outRow(b, i);
  };
  auto columnBody = [&](Value i, Value t, Value n) {
    // Column n is column j of head block h; its k range starts at h * K.
    Value h, j = n, kBase = c0;
    if (w.perHead) {
      h = arith::DivUIOp::create(b, loc, n, w.n);
      j = arith::RemUIOp::create(b, loc, n, w.n);
      kBase = arith::MulIOp::create(b, loc, h, w.k);
    }
    auto dot = scf::ForOp::create(
        b, loc, c0, w.k, c1, ValueRange{zeroOf(b, loc, element)},
        [&](OpBuilder &b, Location loc, Value k, ValueRange acc) {
          Value col = w.perHead ? arith::AddIOp::create(b, loc, kBase, k) : k;
          Value x = memref::LoadOp::create(b, loc, lhs, ValueRange{l, col});
          Value y = memref::LoadOp::create(b, loc, w.weight,
                                           weightIndices(w, t, h, k, j));
          Value product = arith::MulFOp::create(b, loc, x, y);
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::AddFOp::create(b, loc, acc[0], product)});
        });
    Value value = dot.getResult(0);
    if (Value s = rowScaleAt(b, loc, scale, scaleBlock, i, n))
      value = arith::MulFOp::create(b, loc, value, s);
    SmallVector<Value, 2> at{o, n};
    if (atomic) {
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, value,
                                  out, at);
      return;
    }
    if (op.getAccumulate())
      value = arith::AddFOp::create(
          b, loc, memref::LoadOp::create(b, loc, out, at), value);
    memref::StoreOp::create(b, loc, value, out, at);
  };
  forEachRowAndColumn(b, loc, rows, segments, fullN, rowBody, columnBody);
}

void lowerOuterProductGemm(OpBuilder &b, GemmOp op) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs(), segments = op.getSegments(),
        lhsRows = op.getLhsRows(), rhsRows = op.getRhsRows(),
        scale = op.getRowScale();
  Type element = cast<MemRefType>(lhs.getType()).getElementType();
  WeightLayout w = getWeightLayout(b, loc, op.getOut(), segments != nullptr,
                                   /*transposed=*/false);
  Value fullN = b.createOrFold<arith::MulIOp>(loc, w.heads, w.n);
  Value rows = lhsRows ? dimOf(b, loc, lhsRows, 0) : dimOf(b, loc, lhs, 0);
  Value scaleBlock = rowScaleBlock(b, loc, scale, fullN);
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);

  // One iteration per output element: an outer loop over [t]? [h]? k and a
  // nested one over n (on a GPU: a block per weight row, a thread per
  // column, coalesced reads of rhs rows).
  SmallVector<Value> upper;
  if (segments)
    upper.push_back(
        b.createOrFold<arith::SubIOp>(loc, dimOf(b, loc, segments, 0), c1));
  if (w.perHead)
    upper.push_back(w.heads);
  upper.push_back(w.k);
  SmallVector<Value> lower(upper.size(), c0), steps(upper.size(), c1);
  auto rowLoop = scf::ParallelOp::create(b, loc, lower, upper, steps);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  SmallVector<Value> ivs = rowLoop.getInductionVars();
  Value t = segments ? ivs.front() : Value();
  Value h = w.perHead ? ivs[ivs.size() - 2] : Value();
  Value k = ivs.back();

  Value begin = c0, end = rows;
  if (segments) {
    begin = loadIndex(b, loc, segments, t);
    end = loadIndex(b, loc, segments, arith::AddIOp::create(b, loc, t, c1));
  }
  auto columnLoop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                            ValueRange{w.n}, ValueRange{c1});
  b.setInsertionPointToStart(columnLoop.getBody());
  Value j = columnLoop.getInductionVars()[0];
  Value colL = k, colR = j;
  if (w.perHead) {
    colL =
        arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, h, w.k), k);
    colR =
        arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, h, w.n), j);
  }
  auto sum = scf::ForOp::create(
      b, loc, begin, end, c1, ValueRange{zeroOf(b, loc, element)},
      [&](OpBuilder &b, Location loc, Value i, ValueRange acc) {
        Value l = lhsRows ? loadIndex(b, loc, lhsRows, i) : i;
        Value r = rhsRows ? loadIndex(b, loc, rhsRows, i) : i;
        Value x = memref::LoadOp::create(b, loc, lhs, ValueRange{l, colL});
        Value y = memref::LoadOp::create(b, loc, rhs, ValueRange{r, colR});
        Value product = arith::MulFOp::create(b, loc, x, y);
        if (Value s = rowScaleAt(b, loc, scale, scaleBlock, i, colR))
          product = arith::MulFOp::create(b, loc, product, s);
        scf::YieldOp::create(
            b, loc, ValueRange{arith::AddFOp::create(b, loc, acc[0], product)});
      });
  // Each element has exactly one writer here, so `atomic` needs no atomics.
  SmallVector<Value> at = weightIndices(w, t, h, k, j);
  Value value = sum.getResult(0);
  if (op.getAccumulate())
    value = arith::AddFOp::create(
        b, loc, memref::LoadOp::create(b, loc, op.getOut(), at), value);
  memref::StoreOp::create(b, loc, value, op.getOut(), at);
}
} // namespace

void hector::loops::lowerGemm(RewriterBase &rewriter, GemmOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  if (op.isOuterProduct())
    lowerOuterProductGemm(rewriter, op);
  else
    lowerRowGemm(rewriter, op);
  hector::templates::emitRowDotLoops(rewriter, op);
  rewriter.eraseOp(op);
}
