//===- SoftmaxAggregateToLoops.cpp - htmpl.softmax_aggregate to loops -----===//
//
// One parallel iteration per destination node t (the rows of `out`); it
// walks t's CSR row once with an online softmax per head:
//
//   out[t, :] = 0;  m_h = -inf;  l_h = 0
//   for slot in row_ptr[t] .. row_ptr[t+1]-1:
//     e = eid[slot];  r = value_rows[e] (or e)
//     for each head h:
//       m' = max(m_h, s[e, h]);  c = exp(m_h - m');  p = exp(s[e, h] - m')
//       l_h = l_h·c + p;  out[t, block h] = out[t, block h]·c + p·values[r,
//       block h] m_h = m'
//   if the row is not empty: out[t, block h] /= l_h
//
// The iteration owns row t of `out`, so it accumulates there with plain
// loads and stores (no atomics, no fill kernel). Every exponent is ≤ 0.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace hector;
using hector::htmpl::SoftmaxAggregateOp;
using hector::loops::constIndex;
using hector::loops::dimOf;
using hector::loops::loadIndex;

namespace {
/// `body(f)` for every column f of head block `head` (`headWidth` columns).
void forHeadColumns(OpBuilder &b, Location loc, int64_t head, int64_t headWidth,
                    function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(b, loc, constIndex(b, loc, head * headWidth),
                     constIndex(b, loc, (head + 1) * headWidth),
                     constIndex(b, loc, 1), ValueRange{},
                     [&](OpBuilder &n, Location, Value f, ValueRange) {
                       body(n, f);
                       scf::YieldOp::create(n, loc);
                     });
}
} // namespace

void hector::loops::lowerSoftmaxAggregate(RewriterBase &rewriter,
                                          SoftmaxAggregateOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value out = op.getOut(), scores = op.getScores(), values = op.getValues();
  Value valueRows = op.getValueRows(), rowPtr = op.getRowPtr(),
        edgeIds = op.getEid();
  int64_t heads = op.getHeads(), headWidth = op.getWidth() / heads;
  Type element = cast<MemRefType>(out.getType()).getElementType();

  Value t = openParallel(rewriter, loc, dimOf(rewriter, loc, out, 0),
                         op.getLaunchBounds());
  OpBuilder &b = rewriter;
  auto constFloat = [&](OpBuilder &at, double v) -> Value {
    return arith::ConstantOp::create(at, loc, at.getFloatAttr(element, v));
  };
  Value zero = constFloat(b, 0.0);
  for (int64_t h = 0; h < heads; ++h)
    forHeadColumns(b, loc, h, headWidth, [&](OpBuilder &n, Value f) {
      memref::StoreOp::create(n, loc, zero, out, ValueRange{t, f});
    });
  Value begin = loadIndex(b, loc, rowPtr, t);
  Value end = loadIndex(
      b, loc, rowPtr, arith::AddIOp::create(b, loc, t, constIndex(b, loc, 1)));

  SmallVector<Value> inits(
      heads, constFloat(b, -std::numeric_limits<double>::infinity()));
  inits.append(heads, zero);
  auto walk = scf::ForOp::create(
      b, loc, begin, end, constIndex(b, loc, 1), inits,
      [&](OpBuilder &w, Location, Value slot, ValueRange state) {
        Value edge = loadIndex(w, loc, edgeIds, slot);
        Value row = valueRows ? loadIndex(w, loc, valueRows, edge) : edge;
        SmallVector<Value> maxima, sums;
        for (int64_t h = 0; h < heads; ++h) {
          Value score = memref::LoadOp::create(
              w, loc, scores, ValueRange{edge, constIndex(w, loc, h)});
          Value oldMax = state[h];
          Value newMax = arith::MaximumFOp::create(w, loc, oldMax, score);
          Value rescale = math::ExpOp::create(
              w, loc, arith::SubFOp::create(w, loc, oldMax, newMax));
          Value weight = math::ExpOp::create(
              w, loc, arith::SubFOp::create(w, loc, score, newMax));
          Value sum = arith::AddFOp::create(
              w, loc, arith::MulFOp::create(w, loc, state[heads + h], rescale),
              weight);
          forHeadColumns(w, loc, h, headWidth, [&](OpBuilder &n, Value f) {
            Value acc = memref::LoadOp::create(n, loc, out, ValueRange{t, f});
            Value value =
                memref::LoadOp::create(n, loc, values, ValueRange{row, f});
            Value next = arith::AddFOp::create(
                n, loc, arith::MulFOp::create(n, loc, acc, rescale),
                arith::MulFOp::create(n, loc, weight, value));
            memref::StoreOp::create(n, loc, next, out, ValueRange{t, f});
          });
          maxima.push_back(newMax);
          sums.push_back(sum);
        }
        maxima.append(sums);
        scf::YieldOp::create(w, loc, maxima);
      });

  // A node without incoming edges keeps its zeros (its sums are 0).
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, begin, end);
  auto normalise = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  b.setInsertionPointToStart(normalise.thenBlock());
  for (int64_t h = 0; h < heads; ++h) {
    Value sum = walk.getResult(heads + h);
    forHeadColumns(b, loc, h, headWidth, [&](OpBuilder &n, Value f) {
      Value acc = memref::LoadOp::create(n, loc, out, ValueRange{t, f});
      memref::StoreOp::create(n, loc, arith::DivFOp::create(n, loc, acc, sum),
                              out, ValueRange{t, f});
    });
  }
  rewriter.eraseOp(op);
}
