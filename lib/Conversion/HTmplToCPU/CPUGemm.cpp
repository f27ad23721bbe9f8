//===- CPUGemm.cpp - htmpl.gemm as vector loops for the CPU -----*- C++ -*-===//
//
// htmpl-to-loops lowers a GEMM row as one dot product over k per output
// column, which is what a GPU thread wants but leaves a CPU with scalar code
// and a strided walk down each weight column. This pass lowers the GEMMs of
// a CPU module first (htmpl-to-loops takes whatever it leaves) so that the
// contiguous dimension is the vector dimension:
//
// Row mode, rhs stored [K, N]: per row, the output columns are cut into
// tiles of at most 256 bytes; each tile is a vector accumulator carried
// through the k loop: acc += lhs[l(i), k] * rhs[t(i), k, tile].
//
// Row mode, rhs stored [N, K] (transpose_rhs): per output column, a vector
// dot product over k (tiles of lhs row and weight row) and one reduction.
//
// Outer-product mode (weight gradients): the rows are cut into chunks;
// each chunk sums its rows' outer products per segment into a private
// [H, K, N] buffer, then adds it to the weight slice: plainly when the chunk
// holds the whole segment (its only writer), else atomically.
//
// A scatter with atomic stores (several rows add into one output row) runs
// per part of the output rows instead, one part per thread of the CPU
// runtime (hector_cpu_num_threads): each part walks all rows in order and
// computes those whose output row it owns, adding without atomics. Each
// output row is then summed in row order whatever the thread count, and no
// locked instruction is issued (an x86 float atomic add is a compare-and-
// swap loop of some 30 cycles, per column).
//
// Both modes keep the instance's semantics exactly (gather, scatter,
// segments and rows outside them, per-head blocks, row scales, accumulate,
// atomic). GEMMs whose weight sizes are not static, or whose memrefs are
// not contiguous along rows, are left to htmpl-to-loops.
//
//===----------------------------------------------------------------------===//

#include "hector/Conversion/Passes.h"
#include "hector/CPURuntimeABI.h"

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <optional>

namespace hector {
#define GEN_PASS_DEF_CPUGEMM
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using hector::templates::constIndex;
using hector::templates::dimOf;
using hector::templates::loadIndex;
using hector::templates::searchOffsets;

namespace {

/// Bytes of one vector tile: 8 AVX2 or 4 AVX-512 registers of accumulators.
constexpr int64_t kTileBytes = 256;
/// Rows per chunk of an outer-product GEMM.
constexpr int64_t kOuterChunkRows = 512;
/// Largest private accumulator of an outer-product chunk (elements).
constexpr int64_t kMaxOuterBuffer = 1 << 20;
/// Rows ahead whose gathered lhs row is prefetched, and the line size.
constexpr int64_t kPrefetchDistance = 8;
constexpr int64_t kCacheLine = 64;
/// More column tiles than this per row are left to htmpl-to-loops (the
/// tiles are unrolled into the code).
constexpr int64_t kMaxTiles = 64;

/// The static shape of an instance's weight: [T]? [H]? then the block.
struct WeightShape {
  bool typed = false, perHead = false, transposed = false;
  int64_t heads = 1, k = 0, n = 0; // per head block, as used (k x n)
  int64_t scaleHeads = 0;          // columns of a [M, H] row scale, else 0
  int64_t fullK() const { return heads * k; }
  int64_t fullN() const { return heads * n; }
  int64_t scaleBlock() const { return scaleHeads ? fullN() / scaleHeads : 0; }
};

/// A run of output columns [head * n + col, + width) that one vector covers.
/// It stays inside one head block and one row-scale block.
struct Tile {
  int64_t head, col, width;
  int64_t column(const WeightShape &w) const { return head * w.n + col; }
};

bool contiguousRows(Value memref) {
  return cast<MemRefType>(memref.getType()).isLastDimUnitStride();
}

std::optional<WeightShape> staticShape(htmpl::GemmOp op) {
  bool outer = op.isOuterProduct();
  auto weight = cast<MemRefType>(outer ? op.getOut().getType()
                                       : op.getRhs().getType());
  WeightShape w;
  w.typed = op.getSegments() != nullptr;
  w.perHead = weight.getRank() == (w.typed ? 4 : 3);
  w.transposed = !outer && op.getTransposeRhs();
  int64_t rank = weight.getRank();
  int64_t kDim = rank - 2, nDim = rank - 1;
  if (w.transposed)
    std::swap(kDim, nDim);
  auto dim = [&](int64_t d) -> std::optional<int64_t> {
    if (weight.isDynamicDim(d))
      return std::nullopt;
    return weight.getDimSize(d);
  };
  std::optional<int64_t> k = dim(kDim), n = dim(nDim);
  std::optional<int64_t> heads =
      w.perHead ? dim(w.typed ? 1 : 0) : std::optional<int64_t>(1);
  if (!k || !n || !heads || *k <= 0 || *n <= 0 || *heads <= 0)
    return std::nullopt;
  w.k = *k;
  w.n = *n;
  w.heads = *heads;
  if (Value scale = op.getRowScale()) {
    auto type = cast<MemRefType>(scale.getType());
    if (type.getRank() == 2) {
      if (type.isDynamicDim(1) || type.getDimSize(1) <= 0 ||
          w.fullN() % type.getDimSize(1) != 0)
        return std::nullopt;
      w.scaleHeads = type.getDimSize(1);
    }
  }
  // Everything read or written as vectors must be contiguous along rows.
  for (Value v : {op.getLhs(), op.getRhs(), op.getOut()})
    if (!contiguousRows(v))
      return std::nullopt;
  return w;
}

/// The column tiles of one output row: per head block, runs of at most
/// `maxWidth` columns that never cross a row-scale block.
SmallVector<Tile> columnTiles(const WeightShape &w, int64_t maxWidth) {
  SmallVector<Tile> tiles;
  for (int64_t h = 0; h < w.heads; ++h) {
    for (int64_t col = 0; col < w.n;) {
      int64_t width = std::min(maxWidth, w.n - col);
      if (int64_t block = w.scaleBlock()) {
        int64_t global = h * w.n + col;
        width = std::min(width, block - global % block);
      }
      tiles.push_back({h, col, width});
      col += width;
    }
  }
  return tiles;
}

int64_t maxTileWidth(Type element) {
  int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  return std::max<int64_t>(1, kTileBytes / bytes);
}

/// Builds IR for one instance; holds what every piece of it needs.
class GemmBuilder {
public:
  GemmBuilder(OpBuilder &b, htmpl::GemmOp op, const WeightShape &w)
      : b(b), op(op), w(w), loc(op.getLoc()),
        element(cast<MemRefType>(op.getLhs().getType()).getElementType()) {
    contract = arith::FastMathFlagsAttr::get(b.getContext(),
                                             arith::FastMathFlags::contract);
  }

  void lowerRowMode();
  LogicalResult lowerOuterProduct();

private:
  OpBuilder &b;
  htmpl::GemmOp op;
  const WeightShape &w;
  Location loc;
  Type element;
  arith::FastMathFlagsAttr contract;
  /// Scattered atomic rows run per owner of the output rows: each output
  /// row has one writer, and adds up its rows in order.
  bool owned = false;

  Value idx(int64_t v) { return constIndex(b, loc, v); }
  VectorType vec(int64_t width) { return VectorType::get({width}, element); }
  Value zeroVector(int64_t width) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vec(width), b.getZeroAttr(element)));
  }
  Value zeroScalar() {
    return arith::ConstantOp::create(b, loc,
                                     cast<TypedAttr>(b.getZeroAttr(element)));
  }
  /// acc + x * y, allowed to become one fused multiply-add.
  Value multiplyAdd(Value acc, Value x, Value y) {
    Value product = arith::MulFOp::create(b, loc, x, y, contract);
    return arith::AddFOp::create(b, loc, acc, product, contract);
  }
  Value load(Value memref, ValueRange at, int64_t width) {
    return vector::LoadOp::create(b, loc, vec(width), memref, at);
  }
  void store(Value value, Value memref, ValueRange at) {
    vector::StoreOp::create(b, loc, value, memref, at);
  }
  Value index(Value list, Value i) {
    return list ? loadIndex(b, loc, list, i) : i;
  }
  Value rows() {
    Value lhsRows = op.getLhsRows();
    return lhsRows ? dimOf(b, loc, lhsRows, 0) : dimOf(b, loc, op.getLhs(), 0);
  }
  /// Number of types T of a [T+1] segment table.
  Value numTypes() {
    return b.createOrFold<arith::SubIOp>(
        loc, dimOf(b, loc, op.getSegments(), 0), idx(1));
  }
  /// The weight indices of element (k, column) of head h of slice t.
  SmallVector<Value> weightAt(Value t, int64_t h, Value k, Value column) {
    SmallVector<Value> at;
    if (w.typed)
      at.push_back(t);
    if (w.perHead)
      at.push_back(idx(h));
    if (w.transposed)
      at.append({column, k});
    else
      at.append({k, column});
    return at;
  }
  /// Row scale of row i for output column `column` (a global column), or
  /// null without one.
  Value scaleAt(Value i, Value column) {
    Value scale = op.getRowScale();
    if (!scale)
      return {};
    if (!w.scaleHeads)
      return memref::LoadOp::create(b, loc, scale, i);
    Value head = b.createOrFold<arith::DivUIOp>(loc, column, idx(w.scaleBlock()));
    return memref::LoadOp::create(b, loc, scale, ValueRange{i, head});
  }

  /// With a gather list, asks the cache for the lhs row that row i +
  /// kPrefetchDistance reads: the rows are scattered, so the hardware
  /// prefetcher cannot guess them, and each row is a few cache lines.
  void prefetchGatheredRow(Value i) {
    Value lhsRows = op.getLhsRows();
    if (!lhsRows)
      return;
    Value last = b.createOrFold<arith::SubIOp>(loc, rows(), idx(1));
    Value ahead = arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, i, idx(kPrefetchDistance)), last);
    Value row = loadIndex(b, loc, lhsRows, ahead);
    int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
    for (int64_t col = 0; col < w.fullK(); col += kCacheLine / bytes)
      memref::PrefetchOp::create(b, loc, op.getLhs(), ValueRange{row, idx(col)},
                                 b.getBoolAttr(false), b.getI32IntegerAttr(3),
                                 b.getBoolAttr(true));
  }

  /// The CPU runtime's thread count, declared in the module once.
  func::FuncOp threadCount() {
    auto module = op->getParentOfType<ModuleOp>();
    if (auto existing =
            module.lookupSymbol<func::FuncOp>(kCPUNumThreads))
      return existing;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    auto decl = func::FuncOp::create(
        b, loc, kCPUNumThreads,
        b.getFunctionType({}, {b.getI32Type()}));
    decl.setPrivate();
    return decl;
  }

  /// Opens `scf.parallel (%i) = (0) to (rows)` and, with segments, the guard
  /// that skips rows of no type; returns (i, t) with the insertion point
  /// inside. `t` is null without segments or `withType`.
  std::pair<Value, Value> openRows(bool withType = true);
  /// Writes `value` (a vector of row i, starting at global column n0) to
  /// out[o, n0...] as the instance says: store, accumulate or atomic add.
  void writeTile(Value value, Value o, int64_t n0, int64_t width);
  void writeScalar(Value value, Value o, Value column);
};

std::pair<Value, Value> GemmBuilder::openRows(bool withType) {
  Value i;
  if (!owned) {
    auto loop = scf::ParallelOp::create(
        b, loc, ValueRange{idx(0)}, ValueRange{rows()}, ValueRange{idx(1)});
    b.setInsertionPointToStart(loop.getBody());
    i = loop.getInductionVars()[0];
  } else {
    // One part of the output rows per thread; every part walks all rows in
    // order and keeps those that write its output rows.
    Value threads = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        func::CallOp::create(b, loc, threadCount(), ValueRange{})
            .getResult(0));
    Value parts = arith::MaxSIOp::create(b, loc, threads, idx(1));
    Value outRows = dimOf(b, loc, op.getOut(), 0);
    Value size = arith::MaxSIOp::create(
        b, loc, arith::CeilDivSIOp::create(b, loc, outRows, parts), idx(1));
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{idx(0)},
                                        ValueRange{parts}, ValueRange{idx(1)});
    b.setInsertionPointToStart(loop.getBody());
    Value first = arith::MulIOp::create(b, loc, loop.getInductionVars()[0],
                                        size);
    Value last = arith::AddIOp::create(b, loc, first, size);
    auto walk = scf::ForOp::create(b, loc, idx(0), rows(), idx(1));
    b.setInsertionPoint(walk.getBody()->getTerminator());
    i = walk.getInductionVar();
    Value o = index(op.getOutRows(), i);
    Value mine = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, first, o),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, o, last));
    auto ifMine = scf::IfOp::create(b, loc, mine, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifMine.thenBlock());
  }
  Value segments = op.getSegments();
  if (!segments)
    return {i, Value()};
  // Rows outside [segments[0], segments[T]) have no weight.
  Value count = numTypes();
  Value inside = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                            loadIndex(b, loc, segments, idx(0)), i),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                            loadIndex(b, loc, segments, count)));
  auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  if (!withType)
    return {i, Value()};
  return {i, searchOffsets(b, loc, segments, count, i)};
}

void GemmBuilder::writeTile(Value value, Value o, int64_t n0, int64_t width) {
  Value out = op.getOut();
  if (op.getAtomic() && !owned) {
    // One atomic add per column, in a loop (unrolled, each compare-and-swap
    // loop would be code of its own).
    scf::ForOp::create(
        b, loc, idx(0), idx(width), idx(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value lane, ValueRange) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          Value x = vector::ExtractOp::create(b, loc, value, OpFoldResult(lane));
          Value column = arith::AddIOp::create(b, loc, lane, idx(n0));
          memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, x,
                                      out, ValueRange{o, column});
          scf::YieldOp::create(b, loc);
        });
    return;
  }
  if (op.getAccumulate() || op.getAtomic())
    value = arith::AddFOp::create(b, loc,
                                  load(out, ValueRange{o, idx(n0)}, width),
                                  value);
  store(value, out, ValueRange{o, idx(n0)});
}

void GemmBuilder::writeScalar(Value value, Value o, Value column) {
  Value out = op.getOut();
  if (op.getAtomic() && !owned) {
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, value, out,
                                ValueRange{o, column});
    return;
  }
  if (op.getAccumulate() || op.getAtomic())
    value = arith::AddFOp::create(
        b, loc, memref::LoadOp::create(b, loc, out, ValueRange{o, column}),
        value);
  memref::StoreOp::create(b, loc, value, out, ValueRange{o, column});
}

void GemmBuilder::lowerRowMode() {
  OpBuilder::InsertionGuard guard(b);
  Value lhs = op.getLhs(), rhs = op.getRhs();
  SmallVector<Tile> tiles = columnTiles(w, maxTileWidth(element));

  // Atomic stores without `accumulate` overwrite each scattered row with the
  // sum of its producers: clear those rows first.
  if (op.getAtomic() && !op.getAccumulate()) {
    OpBuilder::InsertionGuard clearGuard(b);
    Value i = openRows(/*withType=*/false).first;
    Value o = index(op.getOutRows(), i);
    int64_t width = maxTileWidth(element);
    for (int64_t n0 = 0; n0 < w.fullN(); n0 += width) {
      int64_t size = std::min(width, w.fullN() - n0);
      store(zeroVector(size), op.getOut(), ValueRange{o, idx(n0)});
    }
  }

  owned = op.getAtomic();
  auto [row, type] = openRows();
  Value i = row, t = type;
  Value l = index(op.getLhsRows(), i);
  Value o = index(op.getOutRows(), i);
  if (!owned)
    prefetchGatheredRow(i);

  if (!w.transposed) {
    for (const Tile &tile : tiles) {
      int64_t n0 = tile.column(w);
      auto dot = scf::ForOp::create(
          b, loc, idx(0), idx(w.k), idx(1),
          ValueRange{zeroVector(tile.width)},
          [&](OpBuilder &nested, Location, Value k, ValueRange acc) {
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            Value col = b.createOrFold<arith::AddIOp>(loc, k,
                                                      idx(tile.head * w.k));
            Value x = memref::LoadOp::create(b, loc, lhs, ValueRange{l, col});
            Value xs = vector::BroadcastOp::create(b, loc, vec(tile.width), x);
            Value y = load(rhs, weightAt(t, tile.head, k, idx(tile.col)),
                           tile.width);
            scf::YieldOp::create(b, loc, multiplyAdd(acc[0], xs, y));
          });
      Value value = dot.getResult(0);
      if (Value s = scaleAt(i, idx(n0)))
        value = arith::MulFOp::create(
            b, loc, value,
            vector::BroadcastOp::create(b, loc, vec(tile.width), s));
      writeTile(value, o, n0, tile.width);
    }
    return;
  }

  // Transposed slices are stored [N, K]: one vector dot product over k per
  // output column, on k tiles of at most a vector's width.
  int64_t kWidth = maxTileWidth(element);
  for (int64_t h = 0; h < w.heads; ++h) {
    scf::ForOp::create(
        b, loc, idx(0), idx(w.n), idx(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value j, ValueRange) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          // Full-width k tiles share one vector accumulator; a shorter last
          // tile is reduced on its own.
          Value full, value;
          for (int64_t k0 = 0; k0 < w.k; k0 += kWidth) {
            int64_t width = std::min(kWidth, w.k - k0);
            Value x = load(lhs, ValueRange{l, idx(h * w.k + k0)}, width);
            Value y = load(rhs, weightAt(t, h, idx(k0), j), width);
            if (width == kWidth) {
              full = full ? multiplyAdd(full, x, y)
                          : arith::MulFOp::create(b, loc, x, y, contract);
              continue;
            }
            value = vector::ReductionOp::create(
                b, loc, vector::CombiningKind::ADD,
                arith::MulFOp::create(b, loc, x, y, contract),
                arith::FastMathFlags::reassoc);
          }
          if (full) {
            Value sum = vector::ReductionOp::create(
                b, loc, vector::CombiningKind::ADD, full,
                arith::FastMathFlags::reassoc);
            value = value ? arith::AddFOp::create(b, loc, sum, value) : sum;
          }
          Value column = b.createOrFold<arith::AddIOp>(loc, j, idx(h * w.n));
          if (Value s = scaleAt(i, column))
            value = arith::MulFOp::create(b, loc, value, s);
          writeScalar(value, o, column);
          scf::YieldOp::create(b, loc);
        });
  }
}

LogicalResult GemmBuilder::lowerOuterProduct() {
  OpBuilder::InsertionGuard guard(b);
  Value lhs = op.getLhs(), rhs = op.getRhs(), out = op.getOut();
  Value segments = op.getSegments();
  SmallVector<Tile> tiles = columnTiles(w, maxTileWidth(element));
  int64_t bufferElements = w.heads * w.k * w.n;
  if (bufferElements > kMaxOuterBuffer)
    return failure();

  // Without `accumulate` the chunks add into zeroed slices.
  Value slices = w.typed ? dimOf(b, loc, out, 0) : idx(1);
  if (!op.getAccumulate()) {
    OpBuilder::InsertionGuard clear(b);
    auto loop = scf::ParallelOp::create(
        b, loc, ValueRange{idx(0), idx(0)}, ValueRange{slices, idx(w.k)},
        ValueRange{idx(1), idx(1)});
    b.setInsertionPointToStart(loop.getBody());
    Value t = loop.getInductionVars()[0], k = loop.getInductionVars()[1];
    for (const Tile &tile : tiles)
      store(zeroVector(tile.width), out,
            weightAt(t, tile.head, k, idx(tile.col)));
  }

  Value total = rows();
  Value chunk = idx(kOuterChunkRows);
  Value chunks = b.createOrFold<arith::CeilDivUIOp>(loc, total, chunk);
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{idx(0)},
                                      ValueRange{chunks}, ValueRange{idx(1)});
  b.setInsertionPointToStart(loop.getBody());
  Value lo = arith::MulIOp::create(b, loc, loop.getInductionVars()[0], chunk);
  Value hi = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, lo, chunk), total);
  // The chunk's private sums, on the heap: an alloca inside the loop would
  // grow the stack with every chunk a thread runs. (One allocation per
  // chunk of kOuterChunkRows rows costs nothing next to their products.)
  auto bufferType = MemRefType::get({w.heads, w.k, w.n}, element);
  Value buffer = memref::AllocOp::create(b, loc, bufferType);

  // One piece: rows [begin, end) of slice t (null: the single weight), which
  // is the slice's only writer when `whole` holds.
  auto piece = [&](Value t, Value begin, Value end, Value whole) {
    scf::ForOp::create(
        b, loc, idx(0), idx(w.k), idx(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value k, ValueRange) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          for (const Tile &tile : tiles)
            store(zeroVector(tile.width), buffer,
                  ValueRange{idx(tile.head), k, idx(tile.col)});
          scf::YieldOp::create(b, loc);
        });
    scf::ForOp::create(
        b, loc, begin, end, idx(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value i, ValueRange) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          Value l = index(op.getLhsRows(), i);
          Value r = index(op.getRhsRows(), i);
          for (const Tile &tile : tiles) {
            int64_t n0 = tile.column(w);
            Value y = load(rhs, ValueRange{r, idx(n0)}, tile.width);
            if (Value s = scaleAt(i, idx(n0)))
              y = arith::MulFOp::create(
                  b, loc, y,
                  vector::BroadcastOp::create(b, loc, vec(tile.width), s));
            scf::ForOp::create(
                b, loc, idx(0), idx(w.k), idx(1), ValueRange{},
                [&](OpBuilder &nested2, Location, Value k, ValueRange) {
                  OpBuilder::InsertionGuard inner2(b);
                  b.setInsertionPoint(nested2.getInsertionBlock(),
                                      nested2.getInsertionPoint());
                  Value col = b.createOrFold<arith::AddIOp>(
                      loc, k, idx(tile.head * w.k));
                  Value x =
                      memref::LoadOp::create(b, loc, lhs, ValueRange{l, col});
                  Value xs =
                      vector::BroadcastOp::create(b, loc, vec(tile.width), x);
                  SmallVector<Value> at{idx(tile.head), k, idx(tile.col)};
                  store(multiplyAdd(load(buffer, at, tile.width), xs, y),
                        buffer, at);
                  scf::YieldOp::create(b, loc);
                });
          }
          scf::YieldOp::create(b, loc);
        });
    // Add the buffer to the slice: plainly when this piece is its only
    // writer, else atomically.
    auto flush = scf::IfOp::create(b, loc, whole, /*withElseRegion=*/true);
    for (bool atomic : {false, true}) {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(atomic ? flush.elseBlock()
                                        : flush.thenBlock());
      scf::ForOp::create(
          b, loc, idx(0), idx(w.k), idx(1), ValueRange{},
          [&](OpBuilder &nested, Location, Value k, ValueRange) {
            OpBuilder::InsertionGuard inner2(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            for (const Tile &tile : tiles) {
              Value sum = load(
                  buffer, ValueRange{idx(tile.head), k, idx(tile.col)},
                  tile.width);
              SmallVector<Value> at = weightAt(t, tile.head, k, idx(tile.col));
              if (!atomic) {
                store(arith::AddFOp::create(b, loc, load(out, at, tile.width),
                                            sum),
                      out, at);
                continue;
              }
              // One atomic add per element, in a loop over the tile.
              scf::ForOp::create(
                  b, loc, idx(0), idx(tile.width), idx(1), ValueRange{},
                  [&](OpBuilder &nested3, Location, Value lane, ValueRange) {
                    OpBuilder::InsertionGuard inner3(b);
                    b.setInsertionPoint(nested3.getInsertionBlock(),
                                        nested3.getInsertionPoint());
                    Value col = arith::AddIOp::create(b, loc, lane,
                                                      idx(tile.col));
                    Value x = memref::LoadOp::create(
                        b, loc, buffer, ValueRange{idx(tile.head), k, col});
                    memref::AtomicRMWOp::create(
                        b, loc, arith::AtomicRMWKind::addf, x, out,
                        weightAt(t, tile.head, k, col));
                    scf::YieldOp::create(b, loc);
                  });
            }
            scf::YieldOp::create(b, loc);
          });
    }
  };

  if (!segments) {
    // Chunks of one weight: the only writer when there is one chunk.
    Value whole = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                        total, chunk);
    piece(Value(), lo, hi, whole);
    memref::DeallocOp::create(b, loc, buffer);
    return success();
  }

  // The segments that overlap [lo, hi), from the one holding lo on.
  Value count = numTypes();
  Value first = searchOffsets(b, loc, segments, count, lo);
  auto walk = scf::WhileOp::create(
      b, loc, TypeRange{b.getIndexType()}, ValueRange{first},
      [&](OpBuilder &nested, Location, ValueRange args) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value t = args[0];
        Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           t, count);
        // segments[t] is only read for t < T (the `and` does not short-circuit,
        // so clamp the index).
        Value safe = arith::MinSIOp::create(b, loc, t, count);
        Value start = loadIndex(b, loc, segments, safe);
        Value before = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                             start, hi);
        scf::ConditionOp::create(b, loc,
                                 arith::AndIOp::create(b, loc, more, before),
                                 args);
      },
      [&](OpBuilder &nested, Location, ValueRange args) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value t = args[0];
        Value segLo = loadIndex(b, loc, segments, t);
        Value segHi = loadIndex(
            b, loc, segments, arith::AddIOp::create(b, loc, t, idx(1)));
        Value begin = arith::MaxSIOp::create(b, loc, lo, segLo);
        Value end = arith::MinSIOp::create(b, loc, hi, segHi);
        Value nonEmpty = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, begin, end);
        auto ifOp = scf::IfOp::create(b, loc, nonEmpty, false);
        {
          OpBuilder::InsertionGuard body(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          Value whole = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, begin,
                                    segLo),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, end,
                                    segHi));
          piece(t, begin, end, whole);
        }
        scf::YieldOp::create(b, loc,
                             ValueRange{arith::AddIOp::create(b, loc, t,
                                                              idx(1))});
      });
  (void)walk;
  memref::DeallocOp::create(b, loc, buffer);
  return success();
}

class CPUGemmPass
    : public hector::impl::CPUGemmBase<CPUGemmPass> {
public:
  using CPUGemmBase::CPUGemmBase;

  void runOnOperation() override {
    SmallVector<htmpl::GemmOp> gemms;
    getOperation().walk([&](htmpl::GemmOp op) { gemms.push_back(op); });
    OpBuilder b(&getContext());
    for (htmpl::GemmOp op : gemms) {
      std::optional<WeightShape> shape = staticShape(op);
      if (!shape)
        continue;
      if (!op.isOuterProduct() && !shape->transposed &&
          static_cast<int64_t>(
              columnTiles(*shape,
                          maxTileWidth(cast<MemRefType>(op.getLhs().getType())
                                           .getElementType()))
                  .size()) > kMaxTiles)
        continue;
      b.setInsertionPoint(op);
      GemmBuilder builder(b, op, *shape);
      if (op.isOuterProduct()) {
        if (failed(builder.lowerOuterProduct()))
          continue;
      } else {
        builder.lowerRowMode();
        // The row-dot epilogue reads back the rows just stored.
        hector::templates::emitRowDotLoops(b, op);
      }
      op.erase();
    }
  }
};

} // namespace

