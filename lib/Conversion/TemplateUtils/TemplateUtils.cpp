//===- TemplateUtils.cpp - helpers shared by the htmpl lowerings -*- C++
//-*-===//

#include "TemplateUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>

using namespace mlir;

Value hector::templates::dimOf(OpBuilder &b, Location loc, Value memref,
                               int64_t dim) {
  auto type = cast<MemRefType>(memref.getType());
  if (!type.isDynamicDim(dim))
    return constIndex(b, loc, type.getDimSize(dim));
  return memref::DimOp::create(b, loc, memref, dim);
}

Value hector::templates::loadIndex(OpBuilder &b, Location loc, Value list,
                                   Value pos) {
  Value raw = memref::LoadOp::create(b, loc, list, pos);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
}

Value hector::templates::searchOffsets(OpBuilder &b, Location loc,
                                       Value offsets, Value count, Value x) {
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1),
        c2 = constIndex(b, loc, 2);
  Type indexType = b.getIndexType();
  // Invariant: offsets[lo] <= x < offsets[hi] (with offsets[count] = +inf),
  // except that lo = 0 also stands for "before every segment".
  auto search = scf::WhileOp::create(
      b, loc, TypeRange{indexType, indexType}, ValueRange{c0, count},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value width = arith::SubIOp::create(b, loc, args[1], args[0]);
        Value open =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, width, c1);
        scf::ConditionOp::create(b, loc, open, args);
      },
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value half = arith::DivUIOp::create(
            b, loc, arith::SubIOp::create(b, loc, args[1], args[0]), c2);
        Value mid = arith::AddIOp::create(b, loc, args[0], half);
        Value start = loadIndex(b, loc, offsets, mid);
        Value below =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, start, x);
        Value lo = arith::SelectOp::create(b, loc, below, mid, args[0]);
        Value hi = arith::SelectOp::create(b, loc, below, args[1], mid);
        scf::YieldOp::create(b, loc, ValueRange{lo, hi});
      });
  return search.getResult(0);
}

Value hector::templates::lowerBound(
    OpBuilder &b, Location loc, Value lo, Value hi,
    function_ref<Value(OpBuilder &, Value)> below) {
  Type index = b.getIndexType();
  auto search = scf::WhileOp::create(
      b, loc, TypeRange{index, index}, ValueRange{lo, hi},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value open = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           args[0], args[1]);
        scf::ConditionOp::create(b, loc, open, args);
      },
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value half = arith::ShRUIOp::create(
            b, loc, arith::SubIOp::create(b, loc, args[1], args[0]),
            constIndex(b, loc, 1));
        Value mid = arith::AddIOp::create(b, loc, args[0], half);
        Value go = below(b, mid);
        Value next = arith::AddIOp::create(b, loc, mid, constIndex(b, loc, 1));
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::SelectOp::create(b, loc, go, next, args[0]),
                       arith::SelectOp::create(b, loc, go, args[1], mid)});
      });
  return search.getResult(0);
}

SmallVector<Value>
hector::templates::weightIndices(const WeightIndexing &weight, Value t, Value h,
                                 Value k, Value n) {
  SmallVector<Value> indices;
  if (weight.typed)
    indices.push_back(t);
  if (weight.perHead)
    indices.push_back(h);
  if (weight.transposed)
    indices.append({n, k});
  else
    indices.append({k, n});
  return indices;
}

void hector::templates::emitRowDotLoops(OpBuilder &b, htmpl::GemmOp op) {
  Value vector = op.getRowDot(), into = op.getRowDotInto();
  if (!vector)
    return;
  Location loc = op.getLoc();
  Value out = op.getOut(), segments = op.getSegments(),
        outRows = op.getOutRows(), lhsRows = op.getLhsRows();
  Type element = cast<MemRefType>(out.getType()).getElementType();
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  Value rows =
      lhsRows ? dimOf(b, loc, lhsRows, 0) : dimOf(b, loc, op.getLhs(), 0);
  Value width = dimOf(b, loc, out, 1);
  OpBuilder::InsertionGuard guard(b);
  auto rowLoop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                         ValueRange{rows}, ValueRange{c1});
  b.setInsertionPointToStart(rowLoop.getBody());
  Value i = rowLoop.getInductionVars()[0];
  Value t = c0;
  if (segments) {
    Value numTypes =
        b.createOrFold<arith::SubIOp>(loc, dimOf(b, loc, segments, 0), c1);
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                              loadIndex(b, loc, segments, c0), i),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                              loadIndex(b, loc, segments, numTypes)));
    t = searchOffsets(b, loc, segments, numTypes, i);
    auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
  }
  Value o = outRows ? loadIndex(b, loc, outRows, i) : i;
  Value zero = arith::ConstantOp::create(
      b, loc, cast<TypedAttr>(b.getZeroAttr(element)));
  // One dot per head: head h covers columns [h·N/H, (h+1)·N/H) (the
  // verifier makes H static and, above 1, a divisor of a static N).
  int64_t heads = cast<MemRefType>(into.getType()).getDimSize(1);
  int64_t headWidth =
      heads == 1 ? 0 : cast<MemRefType>(out.getType()).getDimSize(1) / heads;
  for (int64_t h = 0; h < heads; ++h) {
    Value first = heads == 1 ? c0 : constIndex(b, loc, h * headWidth);
    Value last = heads == 1 ? width : constIndex(b, loc, (h + 1) * headWidth);
    auto dot = scf::ForOp::create(
        b, loc, first, last, c1, ValueRange{zero},
        [&](OpBuilder &b, Location loc, Value n, ValueRange acc) {
          Value x = memref::LoadOp::create(b, loc, out, ValueRange{o, n});
          Value y = memref::LoadOp::create(b, loc, vector, ValueRange{t, n});
          Value sum = arith::AddFOp::create(
              b, loc, acc[0], arith::MulFOp::create(b, loc, x, y));
          scf::YieldOp::create(b, loc, sum);
        });
    memref::StoreOp::create(b, loc, dot.getResult(0), into,
                            ValueRange{i, constIndex(b, loc, h)});
  }
}

SmallVector<Value> hector::templates::bodyArguments(
    OpBuilder &b, Location loc, htmpl::TraversalOp op,
    function_ref<Value(htmpl::AccessScheme)> rowOf) {
  std::array<Value, 8> cache;
  auto row = [&](htmpl::AccessScheme scheme) {
    Value &slot = cache[static_cast<unsigned>(scheme)];
    if (!slot)
      slot = rowOf(scheme);
    return slot;
  };
  Block &body = op.getBody().front();
  Value zero;
  auto unused = [&]() {
    if (!zero)
      zero = constIndex(b, loc, 0);
    return zero;
  };
  SmallVector<Value> args;
  htmpl::AccessScheme idScheme = op.getDomain() == htmpl::Domain::Edges
                                     ? htmpl::AccessScheme::Edge
                                     : htmpl::AccessScheme::Node;
  args.push_back(body.getArgument(0).use_empty() ? unused() : row(idScheme));
  unsigned numOperands = op.getInputs().size() + op.getOutputs().size();
  for (unsigned i = 0; i < numOperands; ++i) {
    htmpl::AccessScheme scheme = op.getScheme(i);
    bool needed = !op.getRowArgument(i).use_empty() &&
                  scheme != htmpl::AccessScheme::Whole;
    args.push_back(needed ? row(scheme) : unused());
  }
  return args;
}

void hector::templates::inlineBody(RewriterBase &rewriter,
                                   htmpl::TraversalOp op, ValueRange args) {
  Block &body = op.getBody().front();
  Operation *yield = body.getTerminator();
  rewriter.inlineBlockBefore(&body, rewriter.getInsertionBlock(),
                             rewriter.getInsertionPoint(), args);
  rewriter.eraseOp(yield);
}
