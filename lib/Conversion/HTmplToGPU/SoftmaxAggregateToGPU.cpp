//===- SoftmaxAggregateToGPU.cpp - htmpl.softmax_aggregate kernel ---------===//
//
// One warp per destination node t, which walks t's CSR row once
// (docs/gpu-templates.md, "Softmax and aggregation in one pass"):
//
//  - the row is read in chunks of 32 slots, one slot per lane: the lanes
//    load their edge id, score(s) and value row index together
//    (coalesced), one chunk ahead (while a chunk's value rows are read,
//    the next chunk's indices and scores are in flight), and the warp
//    combines the chunk's maximum per head with shuffles;
//  - the running maximum m and sum l of each head stay uniform over the
//    warp; when a chunk raises m, the accumulators are rescaled by
//    exp(m_old - m_new) once, and each lane's weight p = exp(s - m_new)
//    is ready before any feature is read;
//  - the features lie across the lanes, V = 4 (128-bit loads), 2 or 1 per
//    lane, a row taking L lanes; with rows narrower than the warp, the
//    32 / L lane groups take consecutive edges of the chunk at once. Lane
//    group g gets edge j + g's row index and weight by an index shuffle,
//    up to 8 edges per group and step, whose rows are all loaded before
//    any is accumulated (a hub's walk then waits for one load per step,
//    not one per edge);
//  - at the end the groups' accumulators (all at the same m) are summed
//    with xor shuffles, divided by l, and group 0 stores the row. A node
//    without incoming edges stores zeros.
//
// Nothing is stored per edge and `out` is written once per element: no
// fill, no atomics. The host picks the V > 1 kernel only when `values`
// and `out` start on a 16-byte boundary (their rows then all do).
//
//===----------------------------------------------------------------------===//

#include "GPULowering.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace hector;
using namespace hector::gpu;
using hector::htmpl::SoftmaxAggregateOp;

namespace {
/// Vectors a lane holds at most in one walk of a row; wider rows are
/// walked in several column passes (each re-reading the scores).
constexpr int64_t kMaxVectorsPerLane = 8;
/// Edges a lane group takes per step of the edge loop (at most; fewer when
/// the warp has more than 4 groups, so that a step stays within a chunk).
/// Their value rows are loaded before any is accumulated: without that, a
/// hub's walk would wait for one row load per edge.
constexpr int64_t kMaxEdgesPerStep = 8;

/// How the columns of a row lie on the lanes.
struct ColumnLayout {
  int64_t vector = 1;         // elements per load (V)
  int64_t rowLanes = 32;      // lanes per row (L), a power of two
  int64_t groups = 1;         // lane groups per warp, 32 / L
  int64_t vectorsPerLane = 1; // per column pass (K)
  int64_t passes = 1;
};

ColumnLayout layoutFor(int64_t width, int64_t vector) {
  ColumnLayout layout;
  layout.vector = vector;
  int64_t vectors = width / vector;
  layout.rowLanes = std::min<int64_t>(kWarpSize, llvm::PowerOf2Ceil(vectors));
  layout.groups = kWarpSize / layout.rowLanes;
  int64_t perLane = llvm::divideCeil(vectors, layout.rowLanes);
  layout.passes = llvm::divideCeil(perLane, kMaxVectorsPerLane);
  layout.vectorsPerLane = llvm::divideCeil(perLane, layout.passes);
  return layout;
}

/// The widest load (4, 2 or 1 elements) that divides the width and the head
/// width, so that no vector straddles two heads.
int64_t widestVector(int64_t width, int64_t headWidth) {
  for (int64_t v : {4, 2})
    if (width % v == 0 && headWidth % v == 0)
      return v;
  return 1;
}

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, SoftmaxAggregateOp op,
                const ColumnLayout &layout)
      : b(b), loc(loc), op(op), layout(layout), heads(op.getHeads()),
        width(op.getWidth()), headWidth(op.getWidth() / op.getHeads()),
        element(cast<MemRefType>(op.getOut().getType()).getElementType()) {}

  void emit();

private:
  Value constFloat(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(element, v));
  }
  Type accType() {
    return layout.vector == 1 ? element
                              : Type(VectorType::get({layout.vector}, element));
  }
  Value splat(Value scalar) {
    if (layout.vector == 1)
      return scalar;
    return vector::BroadcastOp::create(b, loc, accType(), scalar);
  }
  Value shuffle(Value v, Value offset, mlir::gpu::ShuffleMode mode) {
    return mlir::gpu::ShuffleOp::create(b, loc, v, offset,
                                        constI32(b, loc, kWarpSize), mode)
        .getShuffleResult();
  }
  Value shuffleXor(Value v, int32_t offset) {
    return shuffle(v, constI32(b, loc, offset), mlir::gpu::ShuffleMode::XOR);
  }
  /// Butterfly over the whole warp: every lane gets the combination.
  Value warpReduce(Value v, bool isMax) {
    for (int32_t offset = kWarpSize / 2; offset >= 1; offset /= 2) {
      Value other = shuffleXor(v, offset);
      v = isMax ? Value(arith::MaximumFOp::create(b, loc, v, other))
                : Value(arith::AddFOp::create(b, loc, v, other));
    }
    return v;
  }
  /// values[head of vector k] among per-head values (select chain).
  Value perVectorHead(ArrayRef<Value> perHead, int64_t k) {
    Value result = perHead[0];
    for (int64_t h = 1; h < heads; ++h)
      result =
          arith::SelectOp::create(b, loc, isHead[k][h], perHead[h], result);
    return result;
  }
  void emitPass(int64_t pass);

  OpBuilder &b;
  Location loc;
  SoftmaxAggregateOp op;
  ColumnLayout layout;
  int64_t heads, width, headWidth;
  Type element;
  // Per launch.
  Value node, lane, group, begin, end;
  // Per pass: the column of each of the lane's vectors, whether it lies in
  // the row, and whether it belongs to head h.
  SmallVector<Value> columns, columnValid;
  SmallVector<SmallVector<Value>> isHead;
};

void KernelBuilder::emitPass(int64_t pass) {
  Value zeroIndex = constIndex(b, loc, 0), oneIndex = constIndex(b, loc, 1);
  Value laneInRow =
      arith::RemUIOp::create(b, loc, lane, constIndex(b, loc, layout.rowLanes));
  columns.clear();
  columnValid.clear();
  isHead.clear();
  for (int64_t k = 0; k < layout.vectorsPerLane; ++k) {
    int64_t first = (pass * layout.vectorsPerLane + k) * layout.rowLanes;
    Value vectorIndex =
        arith::AddIOp::create(b, loc, laneInRow, constIndex(b, loc, first));
    Value column = arith::MulIOp::create(b, loc, vectorIndex,
                                         constIndex(b, loc, layout.vector));
    Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        column, constIndex(b, loc, width));
    // Out-of-row lanes read column 0 (any valid column) and store nothing.
    columns.push_back(
        arith::SelectOp::create(b, loc, valid, column, zeroIndex));
    columnValid.push_back(valid);
    Value head = arith::DivUIOp::create(b, loc, columns.back(),
                                        constIndex(b, loc, headWidth));
    SmallVector<Value> flags;
    for (int64_t h = 0; h < heads; ++h)
      flags.push_back(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            head, constIndex(b, loc, h)));
    isHead.push_back(flags);
  }

  Value values = op.getValues(), scores = op.getScores(),
        valueRows = op.getValueRows();
  Value lowest = constFloat(-std::numeric_limits<double>::infinity());
  Value zero = constFloat(0.0);
  Value lastSlot = arith::SubIOp::create(b, loc, end, oneIndex);
  // The value row (i32, for the index shuffles) and scores of the lane's
  // slot of a chunk; lanes past the row end read its last slot (their
  // weight is 0).
  Type i32 = b.getI32Type();
  auto loadSlot = [&](Value slot) {
    Value edge =
        loadIndex(b, loc, op.getEid(), minIndex(b, loc, slot, lastSlot));
    Value row = valueRows ? loadIndex(b, loc, valueRows, edge) : edge;
    SmallVector<Value> loaded = {arith::IndexCastOp::create(b, loc, i32, row)};
    for (int64_t h = 0; h < heads; ++h)
      loaded.push_back(memref::LoadOp::create(
          b, loc, scores, ValueRange{edge, constIndex(b, loc, h)}));
    return loaded;
  };
  // The first chunk's slots, loaded before the walk (an empty row loads
  // nothing: its edge arrays may be empty); each chunk then loads the next
  // one's before its own edges, so that those loads overlap the value rows.
  SmallVector<Type> slotTypes = {i32};
  slotTypes.append(heads, element);
  auto firstLoad = scf::IfOp::create(
      b, loc, slotTypes,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, begin, end),
      /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(firstLoad.thenBlock());
    scf::YieldOp::create(b, loc,
                         loadSlot(arith::AddIOp::create(b, loc, begin, lane)));
    b.setInsertionPointToStart(firstLoad.elseBlock());
    SmallVector<Value> none = {constI32(b, loc, 0)};
    none.append(heads, zero);
    scf::YieldOp::create(b, loc, none);
  }

  SmallVector<Value> inits(heads, lowest);
  inits.append(heads, zero);
  inits.append(layout.vectorsPerLane, splat(zero));
  llvm::append_range(inits, firstLoad.getResults());
  int64_t slotState = 2 * heads + layout.vectorsPerLane;
  // Edges per lane group and step of the edge loop: their rows are loaded
  // together (independent loads in flight), then accumulated.
  int64_t unroll =
      std::min<int64_t>(kMaxEdgesPerStep, kWarpSize / layout.groups);

  auto chunks = scf::ForOp::create(
      b, loc, begin, end, constIndex(b, loc, kWarpSize), inits,
      [&](OpBuilder &, Location, Value chunk, ValueRange state) {
        Value slot = arith::AddIOp::create(b, loc, chunk, lane);
        Value inChunk =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, slot, end);
        Value row32 = state[slotState];
        SmallVector<Value> next = loadSlot(
            arith::AddIOp::create(b, loc, slot, constIndex(b, loc, kWarpSize)));
        SmallVector<Value> maxima, sums, weights, rescales;
        for (int64_t h = 0; h < heads; ++h) {
          Value score = arith::SelectOp::create(
              b, loc, inChunk, state[slotState + 1 + h], lowest);
          Value newMax = arith::MaximumFOp::create(
              b, loc, state[h], warpReduce(score, /*isMax=*/true));
          rescales.push_back(math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, state[h], newMax)));
          Value weight = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, score, newMax));
          weight = arith::SelectOp::create(b, loc, inChunk, weight, zero);
          Value chunkSum = warpReduce(weight, /*isMax=*/false);
          sums.push_back(arith::AddFOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, state[heads + h], rescales.back()),
              chunkSum));
          maxima.push_back(newMax);
          weights.push_back(weight);
        }
        SmallVector<Value> accs;
        for (int64_t k = 0; k < layout.vectorsPerLane; ++k)
          accs.push_back(arith::MulFOp::create(
              b, loc, state[2 * heads + k], splat(perVectorHead(rescales, k))));

        // The chunk's edges, `groups · unroll` per step: lane group g takes
        // edges j + u·groups + g (always < 32; past the row end the weight
        // is 0 and the row the last slot's).
        Value count =
            minIndex(b, loc, arith::SubIOp::create(b, loc, end, chunk),
                     constIndex(b, loc, kWarpSize));
        auto edges = scf::ForOp::create(
            b, loc, zeroIndex, count,
            constIndex(b, loc, layout.groups * unroll), accs,
            [&](OpBuilder &, Location, Value j, ValueRange acc) {
              SmallVector<SmallVector<Value>> edgeWeights(unroll);
              SmallVector<SmallVector<Value>> rows(unroll);
              for (int64_t u = 0; u < unroll; ++u) {
                Value source = arith::IndexCastOp::create(
                    b, loc, i32,
                    arith::AddIOp::create(
                        b, loc, j,
                        arith::AddIOp::create(
                            b, loc, group,
                            constIndex(b, loc, u * layout.groups))));
                Value fromRow = arith::IndexCastOp::create(
                    b, loc, b.getIndexType(),
                    shuffle(row32, source, mlir::gpu::ShuffleMode::IDX));
                for (Value weight : weights)
                  edgeWeights[u].push_back(
                      shuffle(weight, source, mlir::gpu::ShuffleMode::IDX));
                for (int64_t k = 0; k < layout.vectorsPerLane; ++k) {
                  SmallVector<Value, 2> at = {fromRow, columns[k]};
                  if (layout.vector == 1)
                    rows[u].push_back(
                        memref::LoadOp::create(b, loc, values, at));
                  else
                    rows[u].push_back(vector::LoadOp::create(
                        b, loc, cast<VectorType>(accType()), values, at,
                        /*nontemporal=*/false,
                        llvm::Align(layout.vector *
                                    element.getIntOrFloatBitWidth() / 8)));
                }
              }
              SmallVector<Value> sum(acc.begin(), acc.end());
              for (int64_t u = 0; u < unroll; ++u)
                for (int64_t k = 0; k < layout.vectorsPerLane; ++k)
                  sum[k] = arith::AddFOp::create(
                      b, loc, sum[k],
                      arith::MulFOp::create(
                          b, loc, splat(perVectorHead(edgeWeights[u], k)),
                          rows[u][k]));
              scf::YieldOp::create(b, loc, sum);
            });
        SmallVector<Value> yields(maxima);
        yields.append(sums);
        llvm::append_range(yields, edges.getResults());
        yields.append(next);
        scf::YieldOp::create(b, loc, yields);
      });

  // Sum the lane groups (all at the final maximum), normalise, store.
  SmallVector<Value> finalSums;
  for (int64_t h = 0; h < heads; ++h)
    finalSums.push_back(chunks.getResult(heads + h));
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, begin, end);
  Value groupZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, group, zeroIndex);
  Value out = op.getOut();
  for (int64_t k = 0; k < layout.vectorsPerLane; ++k) {
    Value acc = chunks.getResult(2 * heads + k);
    for (int64_t offset = layout.rowLanes; offset < kWarpSize; offset *= 2) {
      Value other;
      if (layout.vector == 1) {
        other = shuffleXor(acc, offset);
      } else {
        SmallVector<Value> parts;
        for (int64_t e = 0; e < layout.vector; ++e)
          parts.push_back(shuffleXor(
              vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{e}),
              offset));
        other = vector::FromElementsOp::create(
            b, loc, cast<VectorType>(accType()), parts);
      }
      acc = arith::AddFOp::create(b, loc, acc, other);
    }
    Value normalised =
        arith::DivFOp::create(b, loc, acc, splat(perVectorHead(finalSums, k)));
    Value result = arith::SelectOp::create(b, loc, nonEmpty, normalised,
                                           splat(zeroOf(b, loc, element)));
    auto store = scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, groupZero, columnValid[k]),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    SmallVector<Value, 2> at = {node, columns[k]};
    if (layout.vector == 1)
      memref::StoreOp::create(b, loc, result, out, at);
    else
      vector::StoreOp::create(
          b, loc, result, out, at, /*nontemporal=*/false,
          llvm::Align(layout.vector * element.getIntOrFloatBitWidth() / 8));
  }
}

void KernelBuilder::emit() {
  int64_t threads = op.getLaunchBounds();
  int64_t warps = threads / kWarpSize;
  Value nodes = arith::SubIOp::create(b, loc, dimOf(b, loc, op.getRowPtr(), 0),
                                      constIndex(b, loc, 1));
  nodes = minIndex(b, loc, nodes, dimOf(b, loc, op.getOut(), 0));
  Value grid = ceilDiv(b, loc, nodes, constIndex(b, loc, warps));
  Value c1 = constIndex(b, loc, 1);
  Launch launch = createLaunch(b, loc, grid, c1, c1, threads);
  Value warpSize = constIndex(b, loc, kWarpSize);
  lane = arith::RemUIOp::create(b, loc, launch.thread, warpSize);
  group =
      arith::DivUIOp::create(b, loc, lane, constIndex(b, loc, layout.rowLanes));
  node = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.blockX, constIndex(b, loc, warps)),
      arith::DivUIOp::create(b, loc, launch.thread, warpSize));
  // Uniform over the warp: the shuffles below see all 32 lanes.
  auto inside = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, node, nodes),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(inside.thenBlock());
  begin = loadIndex(b, loc, op.getRowPtr(), node);
  end = loadIndex(b, loc, op.getRowPtr(),
                  arith::AddIOp::create(b, loc, node, c1));
  for (int64_t pass = 0; pass < layout.passes; ++pass)
    emitPass(pass);
}
} // namespace

void hector::gpu::lowerSoftmaxAggregate(RewriterBase &rewriter,
                                        SoftmaxAggregateOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  int64_t width = op.getWidth(), headWidth = width / op.getHeads();
  int64_t vector = widestVector(width, headWidth);
  auto emitKernel = [&](int64_t v) {
    OpBuilder::InsertionGuard inner(rewriter);
    KernelBuilder(rewriter, loc, op, layoutFor(width, v)).emit();
  };
  if (vector == 1) {
    emitKernel(1);
  } else {
    // 128-bit (or 64-bit) loads where both row operands start aligned.
    Value aligned = andAll(rewriter, loc,
                           {startsAligned(rewriter, loc, op.getValues(), 16),
                            startsAligned(rewriter, loc, op.getOut(), 16)});
    auto choice = scf::IfOp::create(rewriter, loc, aligned,
                                    /*withElseRegion=*/true);
    rewriter.setInsertionPoint(choice.thenBlock()->getTerminator());
    emitKernel(vector);
    rewriter.setInsertionPoint(choice.elseBlock()->getTerminator());
    emitKernel(1);
  }
  rewriter.eraseOp(op);
}
