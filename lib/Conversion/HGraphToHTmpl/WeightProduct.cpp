//===- WeightProduct.cpp - lowering of hgraph.weight_product ----*- C++ -*-===//
//
// `R[k] = A[k'] · B[k'']` for every type k: a product of weight slices that
// linear operator reordering creates (RGAT's W_r · a_r, HGT's K_τ · W^att_r).
// It reads no graph rows, so it is not an instance of the row templates: one
// scf.parallel over (type, element of the result slice) computes each
// element as a dot product over the inner dimension. htmpl-to-loops leaves it
// as it is (the CPU runs it as loops) and the CUDA pipeline maps it onto a
// grid like every flat parallel loop of host code. Its work, R · m · n · k
// multiply-adds, is tiny next to any per-edge operator.
//
// Slices are addressed as the dense matrices they stand for: a vector is a
// row on the left and a column on the right, a per-head slice [H, a, b] the
// block-diagonal [H·a, H·b] matrix, so the inner sum of an element runs over
// one head block only. A product with `heads H` sums over one head block of
// its vector (or reads its left matrix at the head of the element), and so
// does the outer product with `heads H`.
//
//===----------------------------------------------------------------------===//

#include "WeightProduct.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace hector;
using namespace hector::lowering;
using hector::templates::constIndex;
using hector::templates::loadIndex;
namespace hg = hector::hgraph;

namespace {

/// One factor of the product: its buffer, slice type and side.
struct Factor {
  Value memref;
  hg::WeightType type;
  bool isLeft;

  /// Dense rows and columns of one slice.
  int64_t rows() const {
    return type.isVector() ? (isLeft ? 1 : type.getShape()[0])
                           : type.getInputWidth();
  }
  int64_t cols() const {
    return type.isVector() ? (isLeft ? type.getShape()[0] : 1)
                           : type.getOutputWidth();
  }

  /// Loads dense element (row, col) of slice `slice` (null for a single
  /// weight). For a per-head slice the element must lie in a diagonal block.
  Value load(OpBuilder &b, Location loc, Value slice, Value row,
             Value col) const {
    SmallVector<Value> indices;
    if (slice)
      indices.push_back(slice);
    ArrayRef<int64_t> shape = type.getShape();
    if (type.isVector()) {
      indices.push_back(isLeft ? col : row);
    } else if (type.isMatrix()) {
      indices.append({row, col});
    } else {
      Value blockRows = constIndex(b, loc, shape[1]);
      Value blockCols = constIndex(b, loc, shape[2]);
      indices.append({arith::DivUIOp::create(b, loc, row, blockRows),
                      arith::RemUIOp::create(b, loc, row, blockRows),
                      arith::RemUIOp::create(b, loc, col, blockCols)});
    }
    return memref::LoadOp::create(b, loc, memref, indices);
  }
};

/// The slice of `factor` that result type `k` uses: `k` itself when the
/// factor is indexed like the result, none for a single weight, and for a
/// node-typed factor of an edge-typed result the node type of the endpoint
/// `nodeOf` of edge type `k`, read from its first edge. An edge type without
/// edges has no such node type (its slice is never read): then `valid` is
/// set to false, and the slice index to 0.
Value sliceOf(OpBuilder &b, Location loc, const Factor &factor,
              hg::WeightIndex resultIndex, Value k,
              std::optional<hg::Endpoint> nodeOf,
              const EndpointTypeArrays &graph, Value &valid) {
  hg::WeightIndex index = factor.type.getIndex();
  if (index == hg::WeightIndex::Single)
    return Value();
  if (index == resultIndex)
    return k;
  Value edges = nodeOf == hg::Endpoint::Dst ? graph.edgeDst : graph.edgeSrc;
  Value first = loadIndex(b, loc, graph.etypeOffsets, k);
  Value end =
      loadIndex(b, loc, graph.etypeOffsets,
                arith::AddIOp::create(b, loc, k, constIndex(b, loc, 1)));
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, first, end);
  valid = nonEmpty;
  auto select = scf::IfOp::create(b, loc, TypeRange{b.getIndexType()}, nonEmpty,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(select.thenBlock());
    Value node = loadIndex(b, loc, edges, first);
    scf::YieldOp::create(b, loc, loadIndex(b, loc, graph.nodeType, node));
    b.setInsertionPointToStart(select.elseBlock());
    scf::YieldOp::create(b, loc, constIndex(b, loc, 0));
  }
  return select.getResult(0);
}

/// A new buffer for the weight `result` ([types?, ...slice], the types
/// counted by `counted`'s first dimension), recorded as its value and as a
/// temporary (or `destination` where given), and a parallel loop over (type,
/// element of the result slice) with the builder at the start of its body
/// (the caller keeps an InsertionGuard). Returns the loop's induction
/// variables.
SmallVector<Value> allocateAndLoop(OpBuilder &b, Location loc, Value result,
                                   Value counted, ValueStore &values,
                                   SmallVectorImpl<Value> &temporaries,
                                   Value &out, Value destination = {}) {
  auto resultType = cast<hg::WeightType>(result.getType());
  bool typed = resultType.getIndex() != hg::WeightIndex::Single;
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  if (typed) {
    shape.push_back(ShapedType::kDynamic);
    dynamicSizes.push_back(memref::DimOp::create(b, loc, counted, 0));
  }
  llvm::append_range(shape, resultType.getShape());
  if (destination) {
    out = destination;
  } else {
    out = memref::AllocOp::create(
        b, loc, MemRefType::get(shape, resultType.getElementType()),
        dynamicSizes);
    temporaries.push_back(out);
  }
  values.weights[result] = out;

  Value zero = constIndex(b, loc, 0), one = constIndex(b, loc, 1);
  SmallVector<Value> lower, upper, steps;
  if (typed) {
    lower.push_back(zero);
    upper.push_back(dynamicSizes.front());
    steps.push_back(one);
  }
  for (int64_t dim : resultType.getShape()) {
    lower.push_back(zero);
    upper.push_back(constIndex(b, loc, dim));
    steps.push_back(one);
  }
  auto loop = scf::ParallelOp::create(b, loc, lower, upper, steps);
  b.setInsertionPointToStart(loop.getBody());
  return SmallVector<Value>(loop.getInductionVars());
}

} // namespace

LogicalResult hector::lowering::lowerWeightProduct(
    OpBuilder &builder, hg::WeightProductOp op, ValueStore &values,
    const EndpointTypeArrays &graph, SmallVectorImpl<Value> &temporaries) {
  Location loc = op.getLoc();
  auto resultType = cast<hg::WeightType>(op.getResult().getType());
  Factor lhs{values.weights.lookup(op.getLhs()),
             cast<hg::WeightType>(op.getLhs().getType()), /*isLeft=*/true};
  Factor rhs{values.weights.lookup(op.getRhs()),
             cast<hg::WeightType>(op.getRhs().getType()), /*isLeft=*/false};
  // Every weight producer is lowered before its users; this guards the
  // invariant rather than an input error.
  if (!lhs.memref || !rhs.memref)
    return op.emitError("hgraph-to-htmpl: a weight product multiplies weight "
                        "arguments or other weight products only");
  hg::WeightIndex index = resultType.getIndex();
  bool typed = index != hg::WeightIndex::Single;

  // One iteration per (type, element of the result slice), the types
  // counted by a factor indexed like the result (weight_product's verifier
  // ensures one is).
  OpBuilder::InsertionGuard guard(builder);
  OpBuilder &b = builder;
  Value out;
  SmallVector<Value> ivs =
      allocateAndLoop(b, loc, op.getResult(),
                      lhs.type.getIndex() == index ? lhs.memref : rhs.memref,
                      values, temporaries, out);
  Value zero = constIndex(b, loc, 0), one = constIndex(b, loc, 1);
  Value k = typed ? ivs.front() : Value();
  ArrayRef<Value> element = ArrayRef<Value>(ivs).drop_front(typed ? 1 : 0);

  // Dense coordinates (row, col) of the element.
  Value row, col;
  ArrayRef<int64_t> resultShape = resultType.getShape();
  if (resultType.isVector()) {
    // A vector result is a row (vector · matrix) or a column (matrix ·
    // vector).
    row = lhs.type.isVector() ? zero : element[0];
    col = lhs.type.isVector() ? element[0] : zero;
  } else if (resultType.isMatrix()) {
    row = element[0];
    col = element[1];
  } else {
    Value head = element[0];
    row = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, head, constIndex(b, loc, resultShape[1])),
        element[1]);
    col = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, head, constIndex(b, loc, resultShape[2])),
        element[2]);
  }

  // The inner range: one head block of a per-head factor, else all of it.
  Value begin = zero, length = constIndex(b, loc, lhs.cols());
  if (lhs.type.isPerHead()) {
    ArrayRef<int64_t> block = lhs.type.getShape();
    Value head =
        arith::DivUIOp::create(b, loc, row, constIndex(b, loc, block[1]));
    begin = arith::MulIOp::create(b, loc, head, constIndex(b, loc, block[2]));
    length = constIndex(b, loc, block[2]);
  } else if (rhs.type.isPerHead()) {
    ArrayRef<int64_t> block = rhs.type.getShape();
    Value head =
        arith::DivUIOp::create(b, loc, col, constIndex(b, loc, block[2]));
    begin = arith::MulIOp::create(b, loc, head, constIndex(b, loc, block[1]));
    length = constIndex(b, loc, block[1]);
  }
  // With `heads`, the blocked factor's head blocks: R[i][h] sums over block
  // h of the vector; R[j] (the vector's gradient) over all rows i, reading
  // the left matrix at column head(j) (`lhsByColumn`).
  bool lhsByColumn = false;
  if (std::optional<uint64_t> heads = op.getHeads()) {
    ArrayRef<int64_t> blocked = rhs.type.getShape();
    Value block = constIndex(
        b, loc, blocked.back() / static_cast<int64_t>(*heads));
    if (rhs.type.isVector()) {
      begin = arith::MulIOp::create(b, loc, col, block);
      length = block;
    } else {
      col = element[0];
      row = arith::DivUIOp::create(b, loc, col, block);
      length = constIndex(b, loc, lhs.rows());
      lhsByColumn = true;
    }
  }
  Value end = arith::AddIOp::create(b, loc, begin, length);

  // A slice selected through an edge type's endpoint node type is only right
  // on graphs whose edge types have fixed endpoint types: say so on the entry
  // point, for its manifest and callers.
  std::optional<hg::Endpoint> nodeOf = op.getNodeOf();
  if (nodeOf)
    if (auto entry = b.getInsertionBlock()
                         ->getParentOp()
                         ->getParentOfType<func::FuncOp>())
      entry->setAttr("hector.typed_endpoints", b.getUnitAttr());
  Value valid;
  Value lhsSlice = sliceOf(b, loc, lhs, index, k, nodeOf, graph, valid);
  Value rhsSlice = sliceOf(b, loc, rhs, index, k, nodeOf, graph, valid);
  // The slice of an edge type without edges is 0 (no factor slice is read:
  // there may be no node type at all).
  if (valid)
    end = arith::SelectOp::create(b, loc, valid, end, begin);
  Type elementType = resultType.getElementType();
  Value init =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, 0.0));
  auto sum = scf::ForOp::create(
      b, loc, begin, end, one, ValueRange{init},
      [&](OpBuilder &inner, Location, Value l, ValueRange acc) {
        Value a = lhsByColumn ? lhs.load(inner, loc, lhsSlice, l, row)
                              : lhs.load(inner, loc, lhsSlice, row, l);
        Value c = rhs.load(inner, loc, rhsSlice, l, col);
        Value product = arith::MulFOp::create(inner, loc, a, c);
        scf::YieldOp::create(
            inner, loc,
            ValueRange{arith::AddFOp::create(inner, loc, acc[0], product)});
      });
  SmallVector<Value> outIndices;
  if (typed)
    outIndices.push_back(k);
  llvm::append_range(outIndices, element);
  memref::StoreOp::create(b, loc, sum.getResult(0), out, outIndices);
  return success();
}

LogicalResult
hector::lowering::lowerWeightOuter(OpBuilder &builder, hg::WeightOuterOp op,
                                   ValueStore &values,
                                   SmallVectorImpl<Value> &temporaries,
                                   Value destination) {
  Location loc = op.getLoc();
  auto resultType = cast<hg::WeightType>(op.getResult().getType());
  Value u = values.weights.lookup(op.getLhs());
  Value v = values.weights.lookup(op.getRhs());
  if (!u || !v)
    return op.emitError("hgraph-to-htmpl: a weight outer product multiplies "
                        "weights in memory only");
  bool typed = resultType.getIndex() != hg::WeightIndex::Single;

  // One iteration per (type, element of the result slice): R[k][h][i][j] =
  // u[k][h·a + i] · v[k][h·b + j] (no head dimension: h = 0).
  OpBuilder::InsertionGuard guard(builder);
  OpBuilder &b = builder;
  Value out;
  SmallVector<Value> ivs =
      allocateAndLoop(b, loc, op.getResult(), u, values, temporaries, out,
                      destination);
  ArrayRef<Value> element = ArrayRef<Value>(ivs).drop_front(typed ? 1 : 0);
  Value row = element[element.size() - 2], col = element.back();
  if (resultType.isPerHead()) {
    ArrayRef<int64_t> block = resultType.getShape();
    Value head = element[0];
    row = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, head, constIndex(b, loc, block[1])), row);
    col = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, head, constIndex(b, loc, block[2])), col);
  }
  auto at = [&](ValueRange index) {
    SmallVector<Value> indices;
    if (typed)
      indices.push_back(ivs.front());
    llvm::append_range(indices, index);
    return indices;
  };
  // With `heads`, u is [m, H]: element (row, head(col)).
  SmallVector<Value, 2> uIndex{row};
  if (std::optional<uint64_t> heads = op.getHeads()) {
    int64_t n = cast<hg::WeightType>(op.getRhs().getType()).getShape()[0];
    uIndex.push_back(arith::DivUIOp::create(
        b, loc, col, constIndex(b, loc, n / static_cast<int64_t>(*heads))));
  }
  Value product =
      arith::MulFOp::create(b, loc, memref::LoadOp::create(b, loc, u, at(uIndex)),
                            memref::LoadOp::create(b, loc, v, at(col)));
  memref::StoreOp::create(b, loc, product, out, ivs);
  return success();
}
