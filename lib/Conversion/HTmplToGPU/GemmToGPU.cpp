//===- GemmToGPU.cpp - htmpl.gemm to tiled GPU kernels ----------*- C++ -*-===//
//
// One thread block computes a tile of `tm` x `tn` outputs, stepping through
// the reduction `td` at a time: the block stages a `td` x `tm` slice of the
// left operand and a `td` x `tn` slice of the right one in shared memory,
// synchronises, and every thread accumulates a `cm` x `cn` register block
// (cn = coarsen) from them. `td` is the tile's k times a number of stages
// chosen to keep enough loads in flight (getSchedule).
//
// Row mode (forward and input gradients): the tile is (rows, output
// columns), the reduction runs over K. Blocks tile the instance rows
// globally, [bx * tm, bx * tm + tm); with segments, a block walks the
// segments overlapping its rows and runs one pass per segment piece, staging
// only that segment's weight slice. So the grid is computed on the host from
// memref sizes alone (no device read of the offsets), weights are never
// replicated, and a row tile straddling k segment boundaries costs k extra
// passes (at most T over the whole instance). Gathered rows (lhs_rows) are
// read inline by the A loader, scattered rows (out_rows) written inline by
// the epilogue, which also applies the row scale and stores, accumulates or
// adds atomically, and forms the row-dot epilogue (RowEpilogue::addRowDot:
// shuffles over a row's lanes, one atomic per lane group). Per-head
// block-diagonal weights are independent GEMMs on grid.z.
//
// Outer-product mode (weight gradients): the tile is (weight rows K, weight
// columns N) of one slice, the reduction runs over the instance rows. The
// rows are split over grid.x in chunks (so a huge segment is reduced by
// many blocks); each block walks the segment pieces of its chunk, reduces
// each piece through shared memory and adds its partial tile to the slice
// atomically (the output is cleared first unless `accumulate`).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "hector/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>

using namespace mlir;
using namespace hector;
using namespace hector::gpu;
using namespace hector::gpu::gemm;
using hector::htmpl::GemmOp;

int64_t gemm::fitPowerOfTwo(int64_t size, int64_t floor) {
  int64_t p = floor;
  while (p < size)
    p *= 2;
  return p;
}

Value gemm::lessThan(OpBuilder &b, Location loc, Value x, Value bound) {
  return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x,
                                       bound);
}

SmallVector<Value>
gemm::updateWhere(OpBuilder &b, Location loc, Value active, ValueRange acc,
                  function_ref<SmallVector<Value>(OpBuilder &)> body) {
  if (!active)
    return body(b);
  auto ifOp = scf::IfOp::create(
      b, loc, active,
      [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, body(b)); },
      [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, acc); });
  return SmallVector<Value>(ifOp.getResults());
}

namespace {
/// Outer-product mode: the instance rows are split into about this many
/// chunks (one block column each), so that the atomics of the partial tiles
/// stay few while every SM gets work.
constexpr int64_t kOuterProductChunks = 1024;
/// Shared memory the staging of several k-tiles per barrier may grow to.
constexpr int64_t kStagedBytes = 40 * 1024;
/// At most this many k-tiles are staged per barrier.
constexpr int64_t kMaxStages = 8;
/// ... and at most this many staged elements per thread (each is a load in
/// flight, held in registers until it is stored to shared memory).
constexpr int64_t kMaxStagedPerThread = 32;
/// Outer-product mode: rows reduced per barrier the stages aim at.
constexpr int64_t kOuterStageRows = 32;

/// Where the [K, N] blocks of a weight-shaped operand live: rhs in row mode,
/// out in outer-product mode. Its dims are [T]? [H]? then the block.
struct WeightLayout : templates::WeightIndexing {
  int64_t headDim = 0, kDim = 0, nDim = 0;
};

WeightLayout getWeightLayout(GemmOp op) {
  WeightLayout w;
  Value weight = op.isOuterProduct() ? op.getOut() : op.getRhs();
  int64_t rank = cast<MemRefType>(weight.getType()).getRank();
  w.typed = op.getSegments() != nullptr;
  w.perHead = rank == (w.typed ? 4 : 3);
  w.transposed = !op.isOuterProduct() && op.getTransposeRhs();
  w.headDim = w.typed ? 1 : 0;
  w.kDim = rank - 2;
  w.nDim = rank - 1;
  if (w.transposed)
    std::swap(w.kDim, w.nDim);
  return w;
}

Value weightOf(GemmOp op) {
  return op.isOuterProduct() ? op.getOut() : op.getRhs();
}

/// Static size of a weight dimension, or 0 when dynamic.
int64_t staticSize(Value weight, int64_t dim) {
  auto type = cast<MemRefType>(weight.getType());
  return type.isDynamicDim(dim) ? 0 : type.getDimSize(dim);
}

/// The schedule of an instance, or a diagnostic when its knobs cannot be
/// mapped onto threads. Tiles wider than a small static output are
/// narrowed to it (down to a power of two, not below the coarsening), so a
/// per-head block of 16 columns does not leave three quarters of a 64-wide
/// tile idle; in outer-product mode the row tile is likewise fitted to K.
FailureOr<Schedule> getSchedule(GemmOp op) {
  ArrayRef<int64_t> tile = op.getTile();
  Schedule s;
  s.tm = tile[0];
  s.tn = tile[1];
  s.td = tile[2];
  s.cn = op.getCoarsen();
  s.threads = op.getLaunchBounds();
  WeightLayout w = getWeightLayout(op);
  Value weight = weightOf(op);
  if (int64_t n = staticSize(weight, w.nDim); n > 0 && n < s.tn)
    s.tn = std::min(s.tn, fitPowerOfTwo(n, s.cn));
  if (op.isOuterProduct())
    if (int64_t k = staticSize(weight, w.kDim); k > 0 && k < s.tm)
      s.tm = std::min(s.tm, fitPowerOfTwo(k, 1));

  auto fail = [&](const Twine &why) -> FailureOr<Schedule> {
    return op.emitOpError("cannot be mapped onto a GPU thread block: ")
           << why << " (tile [" << tile[0] << ", " << tile[1] << ", " << tile[2]
           << "], coarsen " << s.cn << ", launch_bounds " << s.threads << ")";
  };
  if (s.tn % s.cn != 0)
    return fail("the column tile is not a multiple of the coarsening factor");
  s.threadsN = s.tn / s.cn;
  if (s.threadsN > s.threads)
    return fail("the column tile needs more threads than launch_bounds "
                "gives; raise coarsen or narrow the tile");
  // The largest divisor of tm that fits the remaining threads.
  s.threadsM = std::min(s.threads / s.threadsN, s.tm);
  while (s.tm % s.threadsM != 0)
    --s.threadsM;
  s.cm = s.tm / s.threadsM;
  if (s.cm * s.cn > kMaxOutputsPerThread)
    return fail("more than " + Twine(kMaxOutputsPerThread) +
                " outputs per thread; raise launch_bounds or shrink the "
                "tile");
  auto element = cast<MemRefType>(op.getLhs().getType()).getElementType();
  int64_t bytes = s.td * (s.tm + 1 + s.tn + 1) *
                  std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  if (bytes > kMaxSharedBytes)
    return fail("the staged tiles need " + Twine(bytes) +
                " bytes of shared memory, more than " + Twine(kMaxSharedBytes));

  // Stages: consecutive k-tiles staged together between two barriers. One
  // k-tile of 8 moves 2 KiB of gathered rows per block and barrier, far too
  // little in flight to hide memory latency; so the staged depth grows (in
  // whole k-tiles) towards the reduction length -- K, or kOuterStageRows
  // rows in outer-product mode -- within kStagedBytes, kMaxStages and
  // kMaxStagedPerThread.
  int64_t reduction = kOuterStageRows;
  if (!op.isOuterProduct()) {
    int64_t k = staticSize(weight, w.kDim);
    reduction = k > 0 ? k : kOuterStageRows;
  }
  int64_t stages = 1;
  while (stages < kMaxStages && s.td * stages < reduction &&
         bytes * (stages + 1) <= kStagedBytes &&
         (s.tm + s.tn) * s.td * (stages + 1) <= kMaxStagedPerThread * s.threads)
    ++stages;
  s.td *= stages;
  return s;
}

/// The builder's view of one kernel: thread coordinates and shared tiles.
struct Kernel {
  Schedule s;
  Value thread;       // thread id in the block
  Value threadRow;    // tid / threadsN: first register row is threadRow * cm
  Value threadCol;    // tid % threadsN: register columns threadCol + j*threadsN
  Value tileA, tileB; // shared [td][tm+1] and [td][tn+1]
  Type element;
};

/// `cond ? value : 0`. The loaders read clamped, always valid addresses and
/// select: no branch per staged element, so the loads of a stage issue
/// together.
Value selectOrZero(OpBuilder &b, Location loc, Value cond, Value value) {
  return arith::SelectOp::create(b, loc, cond, value,
                                 zeroOf(b, loc, value.getType()));
}

/// Whether the thread is the first of its row's group of `lanes` (null
/// when lanes is 1: every thread adds its own share).
Value rowDotLeader(OpBuilder &b, Location loc, Value threadCol, int64_t lanes) {
  if (lanes == 1)
    return {};
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, threadCol, constIndex(b, loc, lanes)),
      constIndex(b, loc, 0));
}

/// min(x, size - 1): a valid index when size > 0.
Value clampBelow(OpBuilder &b, Location loc, Value x, Value size) {
  return minIndex(
      b, loc, x,
      b.createOrFold<arith::SubIOp>(loc, size, constIndex(b, loc, 1)));
}

/// One staged element per (thread, slot): slot p covers element
/// tid + p * threads of a `count`-element tile.
struct Slot {
  Value id;     // linear element id
  Value inTile; // id < count, or null when always true
};

SmallVector<Slot> tileSlots(OpBuilder &b, Location loc, const Kernel &k,
                            int64_t count) {
  SmallVector<Slot> slots;
  int64_t perThread = (count + k.s.threads - 1) / k.s.threads;
  for (int64_t p = 0; p < perThread; ++p) {
    Slot slot;
    slot.id = b.createOrFold<arith::AddIOp>(
        loc, k.thread, constIndex(b, loc, p * k.s.threads));
    if ((p + 1) * k.s.threads > count)
      slot.inTile = lessThan(b, loc, slot.id, constIndex(b, loc, count));
    slots.push_back(slot);
  }
  return slots;
}

/// Stores `value` at tile[d][x] unless the slot lies outside the tile.
void storeSlot(OpBuilder &b, Location loc, const Slot &slot, Value value,
               Value tile, Value d, Value x) {
  if (!slot.inTile) {
    memref::StoreOp::create(b, loc, value, tile, ValueRange{d, x});
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, slot.inTile, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  memref::StoreOp::create(b, loc, value, tile, ValueRange{d, x});
}

/// acc[i][j] += A[d][threadRow*cm + i] * B[d][threadCol + j*threadsN] for
/// d in [0, td), on the staged tiles. Threads beyond the active ones (when
/// the tile has fewer outputs than the block has threads) skip it.
SmallVector<Value> emitTileProduct(OpBuilder &b, Location loc, const Kernel &k,
                                   ValueRange acc) {
  const Schedule &s = k.s;
  auto body = [&](OpBuilder &b) -> SmallVector<Value> {
    Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
    auto loop = scf::ForOp::create(
        b, loc, c0, constIndex(b, loc, s.td), c1, acc,
        [&](OpBuilder &b, Location loc, Value d, ValueRange acc) {
          Value rowBase = arith::MulIOp::create(b, loc, k.threadRow,
                                                constIndex(b, loc, s.cm));
          SmallVector<Value> a, w;
          for (int64_t i = 0; i < s.cm; ++i) {
            Value m =
                arith::AddIOp::create(b, loc, rowBase, constIndex(b, loc, i));
            a.push_back(
                memref::LoadOp::create(b, loc, k.tileA, ValueRange{d, m}));
          }
          for (int64_t j = 0; j < s.cn; ++j) {
            Value n = arith::AddIOp::create(b, loc, k.threadCol,
                                            constIndex(b, loc, j * s.threadsN));
            w.push_back(
                memref::LoadOp::create(b, loc, k.tileB, ValueRange{d, n}));
          }
          // mul + add allowed to contract into one fma (math.fma would
          // become a libdevice call on NVVM).
          auto contract = arith::FastMathFlags::contract;
          SmallVector<Value> next;
          for (int64_t i = 0; i < s.cm; ++i)
            for (int64_t j = 0; j < s.cn; ++j)
              next.push_back(arith::AddFOp::create(
                  b, loc, acc[i * s.cn + j],
                  arith::MulFOp::create(b, loc, a[i], w[j], contract),
                  contract));
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  };
  Value active =
      s.active() == s.threads
          ? Value()
          : lessThan(b, loc, k.thread, constIndex(b, loc, s.active()));
  return updateWhere(b, loc, active, acc, body);
}

/// Runs `piece(t, lo, hi)` for every non-empty intersection of the rows
/// [rowBase, rowEnd) with a segment t (t null and one piece without
/// segments). Block-uniform control flow: the callee may synchronise.
void forEachPiece(OpBuilder &b, Location loc, Value segments, Value rowBase,
                  Value rowEnd,
                  function_ref<void(OpBuilder &, Value, Value, Value)> piece) {
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  if (!segments) {
    auto ifOp = scf::IfOp::create(b, loc, lessThan(b, loc, rowBase, rowEnd),
                                  /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    piece(b, Value(), rowBase, rowEnd);
    return;
  }
  Value numTypes = maxIndex(
      b, loc,
      b.createOrFold<arith::SubIOp>(loc, dimOf(b, loc, segments, 0), c1), c0);
  Value first = searchOffsets(b, loc, segments, numTypes, rowBase);
  Type indexType = b.getIndexType();
  scf::WhileOp::create(
      b, loc, TypeRange{indexType}, ValueRange{first},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        // segments[numTypes] exists, so the load is in bounds even when the
        // first test fails.
        Value t = args[0];
        Value more = arith::AndIOp::create(
            b, loc, lessThan(b, loc, t, numTypes),
            lessThan(b, loc, loadIndex(b, loc, segments, t), rowEnd));
        scf::ConditionOp::create(b, loc, more, args);
      },
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value t = args[0];
        Value next = arith::AddIOp::create(b, loc, t, c1);
        Value lo = maxIndex(b, loc, loadIndex(b, loc, segments, t), rowBase);
        Value hi = minIndex(b, loc, loadIndex(b, loc, segments, next), rowEnd);
        auto ifOp = scf::IfOp::create(b, loc, lessThan(b, loc, lo, hi),
                                      /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          piece(b, t, lo, hi);
        }
        scf::YieldOp::create(b, loc, next);
      });
}

/// Sets up thread coordinates and shared tiles in a fresh launch.
Kernel makeKernel(OpBuilder &b, Location loc, const Schedule &s,
                  const Launch &launch, Type element) {
  Kernel k;
  k.s = s;
  k.element = element;
  k.thread = launch.thread;
  Value threadsN = constIndex(b, loc, s.threadsN);
  k.threadRow = arith::DivUIOp::create(b, loc, launch.thread, threadsN);
  k.threadCol = arith::RemUIOp::create(b, loc, launch.thread, threadsN);
  k.tileA = launch.shared[0];
  k.tileB = launch.shared[1];
  return k;
}

SmallVector<MemRefType> tileTypes(const Schedule &s, Type element) {
  return {workgroupType({s.td, s.tm + 1}, element),
          workgroupType({s.td, s.tn + 1}, element)};
}

/// The per-row scalar of instance row i on full output column `col`.
Value rowScaleAt(OpBuilder &b, Location loc, Value scale, Value fullN, Value i,
                 Value col) {
  if (cast<MemRefType>(scale.getType()).getRank() == 1)
    return memref::LoadOp::create(b, loc, scale, i);
  Value block =
      b.createOrFold<arith::DivUIOp>(loc, fullN, dimOf(b, loc, scale, 1));
  Value head = arith::DivUIOp::create(b, loc, col, block);
  return memref::LoadOp::create(b, loc, scale, ValueRange{i, head});
}

/// Row mode with atomic stores and no accumulate: the scattered rows are
/// cleared by a first kernel (one thread per element of the rows that
/// belong to a segment).
void emitClearScatteredRows(OpBuilder &b, GemmOp op, Value rows, Value fullN,
                            int64_t threads) {
  OpBuilder::InsertionGuard insertion(b);
  Location loc = op.getLoc();
  Value total = b.createOrFold<arith::MulIOp>(loc, rows, fullN);
  Value perBlock = constIndex(b, loc, threads);
  Launch launch =
      createLaunch(b, loc, ceilDiv(b, loc, total, perBlock),
                   constIndex(b, loc, 1), constIndex(b, loc, 1), threads);
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.blockX, perBlock),
      launch.thread);
  Value i = arith::DivUIOp::create(b, loc, id, fullN);
  Value n = arith::RemUIOp::create(b, loc, id, fullN);
  auto guard = scf::IfOp::create(b, loc, lessThan(b, loc, id, total),
                                 /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  if (Value segments = op.getSegments()) {
    Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
    Value numTypes = maxIndex(
        b, loc,
        b.createOrFold<arith::SubIOp>(loc, dimOf(b, loc, segments, 0), c1), c0);
    Value first = loadIndex(b, loc, segments, c0);
    Value last = loadIndex(b, loc, segments, numTypes);
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, first, i),
        lessThan(b, loc, i, last));
    auto typed = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(typed.thenBlock());
  }
  Value o = loadIndex(b, loc, op.getOutRows(), i);
  Type element = cast<MemRefType>(op.getOut().getType()).getElementType();
  memref::StoreOp::create(b, loc, zeroOf(b, loc, element), op.getOut(),
                          ValueRange{o, n});
}

/// The launch of a row-mode GEMM and what every such kernel computes first:
/// host sizes (and the clearing of scattered rows when they are stored
/// atomically), a (row tiles, column tiles, heads) grid, and in the kernel
/// the block's rows [rowBase, rowEnd), first column and column offsets.
struct RowLaunch {
  Value heads, kSize, nSize, fullN, rows; // host
  Launch launch;
  Value head, rowBase, rowEnd, colBase, lhsColBase, outColBase; // kernel
};

RowLaunch createRowLaunch(OpBuilder &b, GemmOp op, const Schedule &s,
                          ArrayRef<MemRefType> tiles) {
  Location loc = op.getLoc();
  WeightLayout w = getWeightLayout(op);
  Value weight = op.getRhs(), lhsRows = op.getLhsRows();
  RowLaunch r;
  Value c1 = constIndex(b, loc, 1);
  r.heads = w.perHead ? dimOf(b, loc, weight, w.headDim) : c1;
  r.kSize = dimOf(b, loc, weight, w.kDim);
  r.nSize = dimOf(b, loc, weight, w.nDim);
  r.fullN = b.createOrFold<arith::MulIOp>(loc, r.heads, r.nSize);
  r.rows = lhsRows ? dimOf(b, loc, lhsRows, 0) : dimOf(b, loc, op.getLhs(), 0);
  if (op.getAtomic() && !op.getAccumulate())
    emitClearScatteredRows(b, op, r.rows, r.fullN, s.threads);
  Value tm = constIndex(b, loc, s.tm), tn = constIndex(b, loc, s.tn);
  r.launch =
      createLaunch(b, loc, ceilDiv(b, loc, r.rows, tm),
                   ceilDiv(b, loc, r.nSize, tn), r.heads, s.threads, tiles);
  r.head = r.launch.blockZ;
  r.rowBase = arith::MulIOp::create(b, loc, r.launch.blockX, tm);
  r.colBase = arith::MulIOp::create(b, loc, r.launch.blockY, tn);
  // A block without columns (N = 0 still launches one) has no rows either,
  // so the clamped loads always have a valid column.
  r.rowEnd = arith::SelectOp::create(
      b, loc, lessThan(b, loc, r.colBase, r.nSize),
      minIndex(b, loc, arith::AddIOp::create(b, loc, r.rowBase, tm), r.rows),
      r.rowBase);
  r.lhsColBase = arith::MulIOp::create(b, loc, r.head, r.kSize);
  r.outColBase = arith::MulIOp::create(b, loc, r.head, r.nSize);
  return r;
}

void lowerRowGemm(OpBuilder &b, GemmOp op, const Schedule &s) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), out = op.getOut(), weight = op.getRhs(),
        segments = op.getSegments(), lhsRows = op.getLhsRows(),
        outRows = op.getOutRows(), scale = op.getRowScale();
  Type element = cast<MemRefType>(lhs.getType()).getElementType();
  WeightLayout w = getWeightLayout(op);

  Value tn = constIndex(b, loc, s.tn), td = constIndex(b, loc, s.td);
  OpBuilder::InsertionGuard insertion(b);
  RowLaunch r = createRowLaunch(b, op, s, tileTypes(s, element));
  Kernel k = makeKernel(b, loc, s, r.launch, element);
  Value head = r.head, rowBase = r.rowBase, rowEnd = r.rowEnd,
        colBase = r.colBase, lhsColBase = r.lhsColBase,
        outColBase = r.outColBase, kSize = r.kSize, nSize = r.nSize,
        fullN = r.fullN;

  forEachPiece(
      b, loc, segments, rowBase, rowEnd,
      [&](OpBuilder &b, Value t, Value lo, Value hi) {
        Value c0 = constIndex(b, loc, 0);
        // A: element (d, m) of the tile is lhs[l(rowBase + m), k0 + d];
        // consecutive threads read consecutive columns of one row. The gathered
        // row of each slot is resolved once, outside the reduction loop.
        SmallVector<Slot> aSlots = tileSlots(b, loc, k, s.tm * s.td);
        SmallVector<Value> aRow, aDepth, aRowOk, aSource;
        for (const Slot &slot : aSlots) {
          Value m = arith::DivUIOp::create(b, loc, slot.id, td);
          Value d = arith::RemUIOp::create(b, loc, slot.id, td);
          Value row = arith::AddIOp::create(b, loc, rowBase, m);
          SmallVector<Value> conds{
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, lo, row),
              lessThan(b, loc, row, hi)};
          if (slot.inTile)
            conds.push_back(slot.inTile);
          Value ok = andAll(b, loc, conds);
          // Rows outside the piece read the piece's first row instead.
          Value source = arith::SelectOp::create(b, loc, ok, row, lo);
          if (lhsRows)
            source = loadIndex(b, loc, lhsRows, source);
          aRow.push_back(m);
          aDepth.push_back(d);
          aRowOk.push_back(ok);
          aSource.push_back(source);
        }
        SmallVector<Slot> bSlots = tileSlots(b, loc, k, s.tn * s.td);

        SmallVector<Value> init(s.cm * s.cn, zeroOf(b, loc, element));
        auto kLoop = scf::ForOp::create(
            b, loc, c0, kSize, td, init,
            [&](OpBuilder &b, Location loc, Value k0, ValueRange acc) {
              for (size_t p = 0; p < aSlots.size(); ++p) {
                Value m = aRow[p], d = aDepth[p], ok = aRowOk[p],
                      source = aSource[p];
                const Slot &slot = aSlots[p];
                Value col = arith::AddIOp::create(b, loc, k0, d);
                Value both = arith::AndIOp::create(
                    b, loc, ok, lessThan(b, loc, col, kSize));
                Value lhsCol = arith::AddIOp::create(
                    b, loc, lhsColBase, clampBelow(b, loc, col, kSize));
                Value value =
                    selectOrZero(b, loc, both,
                                 memref::LoadOp::create(
                                     b, loc, lhs, ValueRange{source, lhsCol}));
                storeSlot(b, loc, slot, value, k.tileA, d, m);
              }
              // B: element (d, n) is the weight at (k0 + d, colBase + n); the
              // thread order follows the stored layout so reads coalesce.
              for (const Slot &slot : bSlots) {
                Value d, n;
                if (w.transposed) {
                  d = arith::RemUIOp::create(b, loc, slot.id, td);
                  n = arith::DivUIOp::create(b, loc, slot.id, td);
                } else {
                  d = arith::DivUIOp::create(b, loc, slot.id, tn);
                  n = arith::RemUIOp::create(b, loc, slot.id, tn);
                }
                Value kk = arith::AddIOp::create(b, loc, k0, d);
                Value col = arith::AddIOp::create(b, loc, colBase, n);
                SmallVector<Value> conds{lessThan(b, loc, kk, kSize),
                                         lessThan(b, loc, col, nSize)};
                if (slot.inTile)
                  conds.push_back(slot.inTile);
                Value value = selectOrZero(
                    b, loc, andAll(b, loc, conds),
                    memref::LoadOp::create(
                        b, loc, weight,
                        weightIndices(w, t, head, clampBelow(b, loc, kk, kSize),
                                      clampBelow(b, loc, col, nSize))));
                storeSlot(b, loc, slot, value, k.tileB, d, n);
              }
              mlir::gpu::BarrierOp::create(b, loc);
              SmallVector<Value> next = emitTileProduct(b, loc, k, acc);
              mlir::gpu::BarrierOp::create(b, loc);
              scf::YieldOp::create(b, loc, next);
            });

        // Epilogue: every register of an active thread that maps to a row of
        // this piece and an existing column.
        RowEpilogue piece{op, lo, hi, nSize, fullN, outColBase, t ? t : c0};
        Value active =
            s.active() == s.threads
                ? Value()
                : lessThan(b, loc, k.thread, constIndex(b, loc, s.active()));
        Value firstRow = arith::AddIOp::create(
            b, loc, rowBase,
            arith::MulIOp::create(b, loc, k.threadRow,
                                  constIndex(b, loc, s.cm)));
        for (int64_t i = 0; i < s.cm; ++i) {
          Value row =
              arith::AddIOp::create(b, loc, firstRow, constIndex(b, loc, i));
          for (int64_t j = 0; j < s.cn; ++j) {
            Value col = arith::AddIOp::create(
                b, loc, colBase,
                arith::AddIOp::create(b, loc, k.threadCol,
                                      constIndex(b, loc, j * s.threadsN)));
            auto ifOp =
                scf::IfOp::create(b, loc, piece.writes(b, loc, row, col, active),
                                  /*withElseRegion=*/false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ifOp.thenBlock());
            Value value = kLoop.getResult(i * s.cn + j);
            Value outCol = piece.outColumn(b, loc, col);
            if (scale)
              value = arith::MulFOp::create(
                  b, loc, value, rowScaleAt(b, loc, scale, fullN, row, outCol));
            Value o = outRows ? loadIndex(b, loc, outRows, row) : row;
            SmallVector<Value, 2> at{o, outCol};
            if (op.getAtomic()) {
              memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf,
                                          value, out, at);
              continue;
            }
            if (op.getAccumulate())
              value = arith::AddFOp::create(
                  b, loc, memref::LoadOp::create(b, loc, out, at), value);
            memref::StoreOp::create(b, loc, value, out, at);
          }
        }
        if (!piece.hasRowDot())
          return;
        // Row dot: the threadsN consecutive threads of a row hold its
        // columns threadCol + j * threadsN.
        SmallVector<Value> cols, a;
        for (int64_t j = 0; j < s.cn; ++j) {
          Value col = arith::AddIOp::create(
              b, loc, colBase,
              arith::AddIOp::create(b, loc, k.threadCol,
                                    constIndex(b, loc, j * s.threadsN)));
          cols.push_back(col);
          a.push_back(
              piece.rowDotVector(b, loc, col, piece.outColumn(b, loc, col), 1));
        }
        for (int64_t i = 0; i < s.cm; ++i) {
          Value row =
              arith::AddIOp::create(b, loc, firstRow, constIndex(b, loc, i));
          SmallVector<RowEpilogue::RowDotRun> runs;
          for (int64_t j = 0; j < s.cn; ++j)
            runs.push_back({kLoop.getResult(i * s.cn + j), a[j], cols[j]});
          piece.addRowDots(b, loc, row, runs, /*run=*/1,
                           rowDotLanes(s.threadsN), k.threadCol, active);
        }
      });
}

void lowerOuterProductGemm(OpBuilder &b, GemmOp op, const Schedule &s) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs(), out = op.getOut(),
        segments = op.getSegments(), lhsRows = op.getLhsRows(),
        rhsRows = op.getRhsRows(), scale = op.getRowScale();
  Type element = cast<MemRefType>(lhs.getType()).getElementType();
  WeightLayout w = getWeightLayout(op);

  // Host: sizes, the row chunk of a block, the grid. Partial tiles are
  // added atomically, so the output starts from zero unless accumulating.
  if (!op.getAccumulate())
    emitZeroFill(b, loc, out, s.threads);
  Value c1 = constIndex(b, loc, 1);
  Value heads = w.perHead ? dimOf(b, loc, out, w.headDim) : c1;
  Value kSize = dimOf(b, loc, out, w.kDim);
  Value nSize = dimOf(b, loc, out, w.nDim);
  Value fullN = b.createOrFold<arith::MulIOp>(loc, heads, nSize);
  Value rows = lhsRows ? dimOf(b, loc, lhsRows, 0) : dimOf(b, loc, lhs, 0);
  Value tm = constIndex(b, loc, s.tm), tn = constIndex(b, loc, s.tn),
        td = constIndex(b, loc, s.td);
  // chunk = td * ceil(ceil(rows / kOuterProductChunks) / td), at least td.
  Value chunk = b.createOrFold<arith::MulIOp>(
      loc,
      maxIndex(b, loc,
               ceilDiv(b, loc,
                       ceilDiv(b, loc, rows,
                               constIndex(b, loc, kOuterProductChunks)),
                       td),
               c1),
      td);
  Value kTiles = ceilDiv(b, loc, kSize, tm);
  Value nTiles = maxIndex(b, loc, ceilDiv(b, loc, nSize, tn), c1);

  OpBuilder::InsertionGuard insertion(b);
  Launch launch =
      createLaunch(b, loc, ceilDiv(b, loc, rows, chunk),
                   b.createOrFold<arith::MulIOp>(loc, kTiles, nTiles), heads,
                   s.threads, tileTypes(s, element));
  Kernel k = makeKernel(b, loc, s, launch, element);
  Value head = launch.blockZ;
  Value kBase = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, launch.blockY, nTiles), tm);
  Value colBase = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, launch.blockY, nTiles), tn);
  Value rowBase = arith::MulIOp::create(b, loc, launch.blockX, chunk);
  // A block outside the weight (K or N = 0 still launches one) gets no rows.
  Value inWeight = arith::AndIOp::create(b, loc, lessThan(b, loc, kBase, kSize),
                                         lessThan(b, loc, colBase, nSize));
  Value rowEnd = arith::SelectOp::create(
      b, loc, inWeight,
      minIndex(b, loc, arith::AddIOp::create(b, loc, rowBase, chunk), rows),
      rowBase);
  Value lhsColBase = arith::MulIOp::create(b, loc, head, kSize);
  Value rhsColBase = arith::MulIOp::create(b, loc, head, nSize);

  forEachPiece(
      b, loc, segments, rowBase, rowEnd,
      [&](OpBuilder &b, Value t, Value lo, Value hi) {
        SmallVector<Slot> aSlots = tileSlots(b, loc, k, s.tm * s.td);
        SmallVector<Slot> bSlots = tileSlots(b, loc, k, s.tn * s.td);
        SmallVector<Value> init(s.cm * s.cn, zeroOf(b, loc, element));
        auto rowLoop = scf::ForOp::create(
            b, loc, lo, hi, td, init,
            [&](OpBuilder &b, Location loc, Value r0, ValueRange acc) {
              // A: element (d, m) is lhs[l(r0 + d), K-offset + m]; B: element
              // (d, n) is rhs[r(r0 + d), N-offset + n] times the row scale.
              // Consecutive threads read consecutive columns.
              for (const Slot &slot : aSlots) {
                Value d = arith::DivUIOp::create(b, loc, slot.id, tm);
                Value m = arith::RemUIOp::create(b, loc, slot.id, tm);
                Value row = arith::AddIOp::create(b, loc, r0, d);
                Value kk = arith::AddIOp::create(b, loc, kBase, m);
                SmallVector<Value> conds{lessThan(b, loc, row, hi),
                                         lessThan(b, loc, kk, kSize)};
                if (slot.inTile)
                  conds.push_back(slot.inTile);
                Value ok = andAll(b, loc, conds);
                Value source = arith::SelectOp::create(
                    b, loc, lessThan(b, loc, row, hi), row, lo);
                if (lhsRows)
                  source = loadIndex(b, loc, lhsRows, source);
                Value col = arith::AddIOp::create(
                    b, loc, lhsColBase, clampBelow(b, loc, kk, kSize));
                Value value =
                    selectOrZero(b, loc, ok,
                                 memref::LoadOp::create(
                                     b, loc, lhs, ValueRange{source, col}));
                storeSlot(b, loc, slot, value, k.tileA, d, m);
              }
              for (const Slot &slot : bSlots) {
                Value d = arith::DivUIOp::create(b, loc, slot.id, tn);
                Value n = arith::RemUIOp::create(b, loc, slot.id, tn);
                Value row = arith::AddIOp::create(b, loc, r0, d);
                Value col = arith::AddIOp::create(b, loc, colBase, n);
                SmallVector<Value> conds{lessThan(b, loc, row, hi),
                                         lessThan(b, loc, col, nSize)};
                if (slot.inTile)
                  conds.push_back(slot.inTile);
                Value ok = andAll(b, loc, conds);
                Value inside = arith::SelectOp::create(
                    b, loc, lessThan(b, loc, row, hi), row, lo);
                Value source =
                    rhsRows ? loadIndex(b, loc, rhsRows, inside) : inside;
                Value fullCol = arith::AddIOp::create(
                    b, loc, rhsColBase, clampBelow(b, loc, col, nSize));
                Value v = memref::LoadOp::create(b, loc, rhs,
                                                 ValueRange{source, fullCol});
                if (scale)
                  v = arith::MulFOp::create(
                      b, loc, v,
                      rowScaleAt(b, loc, scale, fullN, inside, fullCol));
                storeSlot(b, loc, slot, selectOrZero(b, loc, ok, v), k.tileB, d,
                          n);
              }
              mlir::gpu::BarrierOp::create(b, loc);
              SmallVector<Value> next = emitTileProduct(b, loc, k, acc);
              mlir::gpu::BarrierOp::create(b, loc);
              scf::YieldOp::create(b, loc, next);
            });

        // Epilogue: add this piece's partial tile to slice t.
        Value active =
            s.active() == s.threads
                ? Value()
                : lessThan(b, loc, k.thread, constIndex(b, loc, s.active()));
        Value firstK = arith::AddIOp::create(
            b, loc, kBase,
            arith::MulIOp::create(b, loc, k.threadRow,
                                  constIndex(b, loc, s.cm)));
        for (int64_t i = 0; i < s.cm; ++i) {
          Value kk =
              arith::AddIOp::create(b, loc, firstK, constIndex(b, loc, i));
          for (int64_t j = 0; j < s.cn; ++j) {
            Value col = arith::AddIOp::create(
                b, loc, colBase,
                arith::AddIOp::create(b, loc, k.threadCol,
                                      constIndex(b, loc, j * s.threadsN)));
            SmallVector<Value> conds{lessThan(b, loc, kk, kSize),
                                     lessThan(b, loc, col, nSize)};
            if (active)
              conds.push_back(active);
            auto ifOp = scf::IfOp::create(b, loc, andAll(b, loc, conds),
                                          /*withElseRegion=*/false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ifOp.thenBlock());
            memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf,
                                        rowLoop.getResult(i * s.cn + j), out,
                                        weightIndices(w, t, head, kk, col));
          }
        }
      });
}

//===----------------------------------------------------------------------===//
// Row mode on 16-byte vectors
//===----------------------------------------------------------------------===//
//
// The fast row-mode kernel, used when every row starts on a 16-byte boundary
// (K, N and the row lengths of lhs and out multiples of 4; base addresses
// checked on the host, which otherwise launches the general kernel above).
// Each thread owns `cm` rows x 4 adjacent columns. Per k-tile of `td`:
//  - the A tile is staged row-major, [tm][td + 4], as 16-byte chunks of the
//    gathered rows (one vector load and store each: the layout global memory
//    has, so stores are conflict-free); the B tile [td][tn + 4] likewise from
//    a weight stored [K, N], or element-wise from one stored [N, K];
//  - the next k-tile's chunks are loaded into registers before the product
//    of the current one, so their latency overlaps the arithmetic;
//  - the product reads A four depths at a time and B four columns at a time
//    (16-byte shared loads: cm + 4 loads per 16 * cm multiply-adds).
// The padding keeps every shared row 16-byte aligned. The product is a
// TileProduct (Gemm.h): FmaProduct below, or with precision=tf32 the
// tensor-core product of GemmTensorCore.cpp, which pads B differently and
// stages an [N, K] weight column by column.

/// The schedule of the vector kernel, or nullopt when the instance does not
/// qualify (the general kernel then runs alone).
std::optional<Schedule> getVectorSchedule(GemmOp op) {
  if (op.isOuterProduct())
    return std::nullopt;
  auto lhsType = cast<MemRefType>(op.getLhs().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  if (!lhsType.getElementType().isF32() || lhsType.getRank() != 2 ||
      outType.getRank() != 2 || lhsType.isDynamicDim(1) ||
      outType.isDynamicDim(1) || lhsType.getDimSize(1) % 4 != 0 ||
      outType.getDimSize(1) % 4 != 0)
    return std::nullopt;
  WeightLayout w = getWeightLayout(op);
  Value weight = weightOf(op);
  int64_t k = staticSize(weight, w.kDim), n = staticSize(weight, w.nDim);
  if (k <= 0 || n <= 0 || k % 4 != 0 || n % 4 != 0)
    return std::nullopt;
  ArrayRef<int64_t> tile = op.getTile();
  if (op.getCoarsen() != 4)
    return std::nullopt;
  Schedule s;
  s.tm = tile[0];
  s.tn = std::min(tile[1], fitPowerOfTwo(n, 4));
  s.cn = 4;
  s.threads = op.getLaunchBounds();
  // Depth: the tile's k in whole chunks of 4, at most K rounded up.
  s.td = std::min(llvm::alignTo(std::max<int64_t>(tile[2], 4), 4),
                  llvm::alignTo(k, 4));
  if (s.tn % 4 != 0)
    return std::nullopt;
  auto sharedBytes = [&](int64_t tm) {
    return (tm * (s.td + 4) + s.td * (s.tn + 4)) * 4;
  };
  // A column tile narrowed to a small output (a per-head block of 16
  // columns, a map with 4 outputs) takes the rows of the full tile's area
  // instead: at [64, 16] each thread would hold one row of 4 outputs (the
  // staging and index work of a row spread over 4 multiply-adds), at [64, 4]
  // three quarters of the threads would hold none. The rows double while
  // the tile stays within the full tile's outputs and its staging fits.
  while (s.tm * 2 * s.tn <= tile[0] * tile[1] &&
         sharedBytes(s.tm * 2) <= kMaxSharedBytes)
    s.tm *= 2;
  s.threadsN = s.tn / 4;
  if (s.threadsN > s.threads)
    return std::nullopt;
  s.threadsM = std::min(s.threads / s.threadsN, s.tm);
  while (s.tm % s.threadsM != 0)
    --s.threadsM;
  s.cm = s.tm / s.threadsM;
  if (s.cm * s.cn > kMaxOutputsPerThread)
    return std::nullopt;
  if (sharedBytes(s.tm) > kMaxSharedBytes)
    return std::nullopt;
  return s;
}

constexpr int64_t kVector = 4;

VectorType vec4(Type element) { return VectorType::get({kVector}, element); }

/// A vector of `width` elements at `at` (width-aligned: 16 bytes for 4
/// floats).
Value loadVector(OpBuilder &b, Location loc, Value memref, ValueRange at,
                 int64_t width = kVector) {
  auto element = cast<MemRefType>(memref.getType()).getElementType();
  return vector::LoadOp::create(
      b, loc, VectorType::get({width}, element), memref, at,
      /*nontemporal=*/false,
      llvm::Align(width * element.getIntOrFloatBitWidth() / 8));
}

void storeVector(OpBuilder &b, Location loc, Value value, Value memref,
                 ValueRange at) {
  auto type = cast<VectorType>(value.getType());
  vector::StoreOp::create(
      b, loc, value, memref, at, /*nontemporal=*/false,
      llvm::Align(type.getNumElements() *
                  type.getElementType().getIntOrFloatBitWidth() / 8));
}

/// `value` with every element rounded to TF32 (cvt.rna.tf32.f32: 10
/// mantissa bits, to nearest, ties away from zero), kept as f32 bits.
Value roundToTF32(OpBuilder &b, Location loc, Value value) {
  auto type = cast<VectorType>(value.getType());
  SmallVector<Value> rounded;
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    Value x = vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{e});
    auto tf32 = NVVM::ConvertFloatToTF32Op::create(
        b, loc, b.getI32Type(), x, NVVM::FPRoundingMode::RNA,
        NVVM::SaturationMode::NONE, /*relu=*/false);
    rounded.push_back(
        arith::BitcastOp::create(b, loc, type.getElementType(), tf32));
  }
  return vector::FromElementsOp::create(b, loc, type, rounded);
}

/// The fp32 product: each thread owns `cm` rows x 4 adjacent columns and
/// reads A four depths at a time and B four columns at a time (16-byte
/// shared loads: cm + 4 loads per 16 * cm multiply-adds).
class FmaProduct final : public TileProduct {
public:
  using TileProduct::TileProduct;

  SmallVector<MemRefType> tileTypes(Type element) const override {
    return {workgroupType({s.tm, s.td + kVector}, element),
            workgroupType({s.td, s.tn + kVector}, element)};
  }

  void setUp(OpBuilder &b, Location loc, Value thread) override {
    threadRow =
        arith::DivUIOp::create(b, loc, thread, constIndex(b, loc, s.threadsN));
    threadCol =
        arith::RemUIOp::create(b, loc, thread, constIndex(b, loc, s.threadsN));
    active = s.active() == s.threads
                 ? Value()
                 : lessThan(b, loc, thread, constIndex(b, loc, s.active()));
    VectorType vt = vec4(b.getF32Type());
    zero = arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getZeroAttr(b.getF32Type())));
  }

  SmallVector<Value> initialAccumulators(OpBuilder &, Location) override {
    return SmallVector<Value>(s.cm, zero);
  }

  // acc[i] += A[threadRow*cm + i][d] * B[d][threadCol*4 ..] over the tile.
  SmallVector<Value> multiply(OpBuilder &b, Location loc, Value tileA,
                              Value tileB, ValueRange acc) override {
    auto body = [&](OpBuilder &b) {
      SmallVector<Value> next(acc.begin(), acc.end());
      Value firstRow =
          arith::MulIOp::create(b, loc, threadRow, constIndex(b, loc, s.cm));
      Value firstCol =
          arith::MulIOp::create(b, loc, threadCol, constIndex(b, loc, kVector));
      for (int64_t d0 = 0; d0 < s.td; d0 += kVector) {
        SmallVector<Value> a, w4;
        for (int64_t i = 0; i < s.cm; ++i)
          a.push_back(loadVector(
              b, loc, tileA,
              {arith::AddIOp::create(b, loc, firstRow, constIndex(b, loc, i)),
               constIndex(b, loc, d0)}));
        for (int64_t e = 0; e < kVector; ++e)
          w4.push_back(loadVector(b, loc, tileB,
                                  {constIndex(b, loc, d0 + e), firstCol}));
        for (int64_t e = 0; e < kVector; ++e)
          for (int64_t i = 0; i < s.cm; ++i) {
            Value ai = vector::BroadcastOp::create(
                b, loc, zero.getType(),
                vector::ExtractOp::create(b, loc, a[i], ArrayRef<int64_t>{e}));
            next[i] = vector::FMAOp::create(b, loc, ai, w4[e], next[i]);
          }
      }
      return next;
    };
    return updateWhere(b, loc, active, acc, body);
  }

  void emitEpilogue(OpBuilder &b, Location loc, Value rowBase, Value colBase,
                    ValueRange acc, const RowEpilogue &epilogue) override {
    Value firstRow = arith::AddIOp::create(
        b, loc, rowBase,
        arith::MulIOp::create(b, loc, threadRow, constIndex(b, loc, s.cm)));
    Value col = arith::AddIOp::create(
        b, loc, colBase,
        arith::MulIOp::create(b, loc, threadCol, constIndex(b, loc, kVector)));
    Value outCol = epilogue.outColumn(b, loc, col);
    for (int64_t i = 0; i < s.cm; ++i) {
      Value row =
          arith::AddIOp::create(b, loc, firstRow, constIndex(b, loc, i));
      epilogue.store(b, loc, row, col, outCol, active, acc[i]);
    }
    if (!epilogue.hasRowDot())
      return;
    // Row dot: the threadsN consecutive threads of a row hold its columns.
    Value a = epilogue.rowDotVector(b, loc, col, outCol, kVector);
    for (int64_t i = 0; i < s.cm; ++i) {
      Value row =
          arith::AddIOp::create(b, loc, firstRow, constIndex(b, loc, i));
      epilogue.addRowDots(b, loc, row, {{acc[i], a, col}}, kVector,
                          rowDotLanes(s.threadsN), threadCol, active);
    }
  }

private:
  Value threadRow; // first register row: threadRow * cm
  Value threadCol; // first register column: threadCol * 4
  Value active;    // the thread holds outputs (null: every thread)
  Value zero;      // vector<4xf32> of zeros
};

/// One 16-byte chunk of a staged tile that a thread loads: its place in the
/// tile and whether it holds data.
struct Chunk {
  Value inTile;     // chunk id < chunks in the tile (null: always)
  Value row, depth; // A: tile row m and first depth d; B: depth d and first
                    // column n ([K, N] weights) or first depth d and column
                    // n ([N, K] weights)
  Value source;     // A: the (gathered) lhs row read
  Value valid;      // A: the row is inside the piece
};

/// Whether the vector kernel stages its tiles with asynchronous copies
/// (cp.async through nvgpu.device_async_copy): global memory straight to
/// shared, into one of two buffers while the product reads the other, so
/// the staged chunks hold no registers (the register-staged kernel kept 16
/// of them per thread, and its ~110 registers allowed two blocks per SM)
/// and the next k-tile is in flight during the current one's product.
/// Needs plain fp32 staging (TF32 rounds on the way to shared memory) and
/// every thread copying whole chunks (a copy has no predicate, only a
/// source size that zero-fills).
bool stagesAsynchronously(const Schedule &s, const TileProduct &product,
                          const GemmOptions &options) {
  int64_t aChunks = s.tm * s.td / kVector, bChunks = s.td * s.tn / kVector;
  return options.asyncStaging && !product.roundsToTF32() &&
         aChunks % s.threads == 0 && bChunks % s.threads == 0;
}

/// `tile` with a leading dimension of `buffers`.
MemRefType buffered(MemRefType tile, int64_t buffers) {
  SmallVector<int64_t> shape{buffers};
  llvm::append_range(shape, tile.getShape());
  return MemRefType::get(shape, tile.getElementType(),
                         MemRefLayoutAttrInterface(), tile.getMemorySpace());
}

/// Buffer `index` of a buffered tile, as the 2-D tile the product reads.
Value bufferOf(OpBuilder &b, Location loc, Value tiles, Value index) {
  auto type = cast<MemRefType>(tiles.getType());
  ArrayRef<int64_t> shape = type.getShape().drop_front();
  SmallVector<OpFoldResult> offsets{index, b.getIndexAttr(0),
                                    b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(shape[0]),
                                  b.getIndexAttr(shape[1])};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto result = memref::SubViewOp::inferRankReducedResultType(
      shape, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, result, tiles, offsets, sizes,
                                   strides);
}

void lowerRowGemmVector(OpBuilder &b, GemmOp op, TileProduct &product,
                        const GemmOptions &options) {
  Location loc = op.getLoc();
  const Schedule &s = product.schedule();
  Value lhs = op.getLhs(), weight = op.getRhs(), segments = op.getSegments(),
        lhsRows = op.getLhsRows();
  Type element = cast<MemRefType>(lhs.getType()).getElementType();
  WeightLayout w = getWeightLayout(op);
  VectorType vt = vec4(element);
  bool async = stagesAsynchronously(s, product, options);
  // One buffer pair when a single k-tile covers K (static here).
  int64_t buffers = staticSize(weight, w.kDim) > s.td ? 2 : 1;

  Value c0 = constIndex(b, loc, 0);
  OpBuilder::InsertionGuard insertion(b);
  SmallVector<MemRefType> tiles = product.tileTypes(element);
  if (async)
    for (MemRefType &tile : tiles)
      tile = buffered(tile, buffers);
  RowLaunch r = createRowLaunch(b, op, s, tiles);
  Value thread = r.launch.thread, tileA = r.launch.shared[0],
        tileB = r.launch.shared[1];
  product.setUp(b, loc, thread);
  Value head = r.head, rowBase = r.rowBase, rowEnd = r.rowEnd,
        colBase = r.colBase, lhsColBase = r.lhsColBase, kSize = r.kSize,
        nSize = r.nSize;
  Value zeroVector = arith::ConstantOp::create(
      b, loc, vt, DenseElementsAttr::get(vt, b.getZeroAttr(element)));

  // The chunks of a tile of `count` chunks, `perRow` to a tile row.
  auto chunks = [&](OpBuilder &b, int64_t count, int64_t perRow) {
    SmallVector<Chunk> result;
    for (int64_t p = 0; p * s.threads < count; ++p) {
      Chunk c;
      Value id = b.createOrFold<arith::AddIOp>(
          loc, thread, constIndex(b, loc, p * s.threads));
      if ((p + 1) * s.threads > count)
        c.inTile = lessThan(b, loc, id, constIndex(b, loc, count));
      c.row = arith::DivUIOp::create(b, loc, id, constIndex(b, loc, perRow));
      c.depth = arith::MulIOp::create(
          b, loc,
          arith::RemUIOp::create(b, loc, id, constIndex(b, loc, perRow)),
          constIndex(b, loc, kVector));
      result.push_back(c);
    }
    return result;
  };
  auto storeChunk = [&](OpBuilder &b, const Chunk &c, Value value, Value tile,
                        ValueRange at) {
    if (!c.inTile) {
      storeVector(b, loc, value, tile, at);
      return;
    }
    auto ifOp = scf::IfOp::create(b, loc, c.inTile, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    storeVector(b, loc, value, tile, at);
  };

  forEachPiece(
      b, loc, segments, rowBase, rowEnd,
      [&](OpBuilder &b, Value t, Value lo, Value hi) {
        // A chunk (m, d): lhs[l(rowBase + m), k0 + d .. + 3]; rows outside the
        // piece read the piece's first row and are zeroed.
        SmallVector<Chunk> aChunks =
            chunks(b, s.tm * s.td / kVector, s.td / kVector);
        for (Chunk &c : aChunks) {
          Value row = arith::AddIOp::create(b, loc, rowBase, c.row);
          SmallVector<Value> conds{
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, lo, row),
              lessThan(b, loc, row, hi)};
          if (c.inTile)
            conds.push_back(c.inTile);
          c.valid = andAll(b, loc, conds);
          c.source = arith::SelectOp::create(b, loc, c.valid, row, lo);
          if (lhsRows)
            c.source = loadIndex(b, loc, lhsRows, c.source);
        }
        // B chunk: (d, n) of a [K, N] weight as 4 columns; of an [N, K] one as
        // 4 depths of one column (t: element loads, transposed into the tile).
        SmallVector<Chunk> bChunks =
            w.transposed ? chunks(b, s.tn * s.td / kVector, s.td / kVector)
                         : chunks(b, s.td * s.tn / kVector, s.tn / kVector);
        if (w.transposed)
          for (Chunk &c : bChunks)
            std::swap(c.row, c.depth); // (depth chunk start, column)

        // x clamped so that a whole vector from it stays below `size`.
        auto vectorStart = [&](OpBuilder &b, Value x, Value size) {
          return minIndex(
              b, loc, x,
              arith::SubIOp::create(b, loc, size, constIndex(b, loc, kVector)));
        };
        // Where A chunk c of the k-tile at k0 comes from, and whether it
        // holds data (else zeros are staged).
        auto aSource = [&](OpBuilder &b, const Chunk &c, Value k0) {
          Value col = arith::AddIOp::create(b, loc, k0, c.depth);
          Value ok = arith::AndIOp::create(b, loc, c.valid,
                                           lessThan(b, loc, col, kSize));
          Value at = arith::AddIOp::create(b, loc, lhsColBase,
                                           vectorStart(b, col, kSize));
          return std::make_pair(SmallVector<Value>{c.source, at}, ok);
        };
        // The same for B chunk c.
        auto bSource = [&](OpBuilder &b, const Chunk &c, Value k0) {
          // Plain: c.row = depth d, c.depth = column n (4 columns).
          // Transposed: c.row = depth chunk start d, c.depth = column n;
          // the weight stores (n, d .. d + 3) contiguously. The vector's
          // own dimension is clamped to a whole vector, the other one
          // below its size.
          Value kk = arith::AddIOp::create(b, loc, k0, c.row);
          Value col = arith::AddIOp::create(b, loc, colBase, c.depth);
          SmallVector<Value> conds{lessThan(b, loc, kk, kSize),
                                   lessThan(b, loc, col, nSize)};
          if (c.inTile)
            conds.push_back(c.inTile);
          Value depth, column;
          if (w.transposed) {
            depth = vectorStart(b, kk, kSize);
            column = clampBelow(b, loc, col, nSize);
          } else {
            depth = clampBelow(b, loc, kk, kSize);
            column = vectorStart(b, col, nSize);
          }
          return std::make_pair(weightIndices(w, t, head, depth, column),
                                andAll(b, loc, conds));
        };
        // Loads `chunks` of the k-tile at k0 from `memref` into registers,
        // where `source` places them (zero outside the data).
        auto loadChunks = [&](OpBuilder &b, ArrayRef<Chunk> chunks,
                              Value memref, auto source, Value k0) {
          SmallVector<Value> staged;
          for (const Chunk &c : chunks) {
            auto [at, ok] = source(b, c, k0);
            staged.push_back(arith::SelectOp::create(
                b, loc, ok, loadVector(b, loc, memref, at), zeroVector));
          }
          return staged;
        };
        auto loadB = [&](OpBuilder &b, Value k0) {
          return loadChunks(b, bChunks, weight, bSource, k0);
        };
        // Loads one k-tile's chunks into registers.
        auto loadTile = [&](OpBuilder &b, Value k0) {
          SmallVector<Value> staged = loadChunks(b, aChunks, lhs, aSource, k0);
          llvm::append_range(staged, loadB(b, k0));
          return staged;
        };
        // Stores staged B chunks (from loadB) into `tile`.
        auto storeB = [&](OpBuilder &b, ValueRange staged, Value tile) {
          auto stagedValue = [&](size_t p) {
            return product.roundsToTF32() ? roundToTF32(b, loc, staged[p])
                                          : staged[p];
          };
          size_t p = 0;
          for (const Chunk &c : bChunks) {
            Value v = stagedValue(p++);
            if (!w.transposed) {
              storeChunk(b, c, v, tile, {c.row, c.depth});
              continue;
            }
            if (product.stagesWeightColumns()) {
              storeChunk(b, c, v, tile, {c.depth, c.row});
              continue;
            }
            // Four depths of one column: element stores.
            auto store = [&](OpBuilder &b) {
              for (int64_t e = 0; e < kVector; ++e) {
                Value d =
                    arith::AddIOp::create(b, loc, c.row, constIndex(b, loc, e));
                memref::StoreOp::create(
                    b, loc,
                    vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{e}),
                    tile, ValueRange{d, c.depth});
              }
            };
            if (!c.inTile) {
              store(b);
              continue;
            }
            auto ifOp = scf::IfOp::create(b, loc, c.inTile, false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(ifOp.thenBlock());
            store(b);
          }
        };
        auto storeTile = [&](OpBuilder &b, ValueRange staged) {
          size_t p = 0;
          for (const Chunk &c : aChunks) {
            Value v = staged[p++];
            if (product.roundsToTF32())
              v = roundToTF32(b, loc, v);
            storeChunk(b, c, v, tileA, {c.row, c.depth});
          }
          storeB(b, staged.drop_front(aChunks.size()), tileB);
        };
        RowEpilogue epilogue{op,      lo,           hi,        nSize,
                             r.fullN, r.outColBase, t ? t : c0};

        if (async) {
          // Copies the k-tile at k0 into buffer `buffer` as one group: A
          // (and B from a [K, N] weight) by 16-byte asynchronous copies
          // that read nothing and zero-fill outside the data; B from an
          // [N, K] weight through registers (transposed by element stores).
          auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
          auto copy = [&](OpBuilder &b, Value tiles, Value buffer,
                          const Chunk &c, Value src, ValueRange at, Value ok,
                          bool stream) {
            Value elements = arith::SelectOp::create(
                b, loc, ok, constIndex(b, loc, kVector), c0);
            return nvgpu::DeviceAsyncCopyOp::create(
                b, loc, tokenType, tiles, ValueRange{buffer, c.row, c.depth},
                src, at, b.getIndexAttr(kVector), elements,
                stream ? b.getUnitAttr() : UnitAttr());
          };
          auto issue = [&](OpBuilder &b, Value k0, Value buffer) -> Value {
            SmallVector<Value> tokens;
            for (const Chunk &c : aChunks) {
              auto [at, ok] = aSource(b, c, k0);
              // Gathered rows are read once: past L1 (cp.async.cg).
              tokens.push_back(
                  copy(b, tileA, buffer, c, lhs, at, ok, /*stream=*/true));
            }
            if (w.transposed) {
              storeB(b, loadB(b, k0), bufferOf(b, loc, tileB, buffer));
            } else {
              for (const Chunk &c : bChunks) {
                auto [idx, ok] = bSource(b, c, k0);
                tokens.push_back(copy(b, tileB, buffer, c, weight, idx, ok,
                                      /*stream=*/false));
              }
            }
            return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                           tokens);
          };
          // The k loop carries the accumulators (kept as loop values, the
          // products stay in the loop rather than sinking into the
          // epilogue's branches) and the group of the tile it multiplies.
          SmallVector<Value> init = product.initialAccumulators(b, loc);
          init.push_back(issue(b, c0, c0));
          Value td = constIndex(b, loc, s.td);
          Value bufferCount = constIndex(b, loc, buffers);
          auto kLoop = scf::ForOp::create(
              b, loc, c0, kSize, td, init,
              [&](OpBuilder &b, Location loc, Value k0, ValueRange args) {
                Value pending = args.back();
                Value buffer = arith::RemUIOp::create(
                    b, loc, arith::DivUIOp::create(b, loc, k0, td),
                    bufferCount);
                Value next = arith::AddIOp::create(b, loc, k0, td);
                // Tile k0 has landed once at most the next tile's group
                // is pending.
                auto prefetch = scf::IfOp::create(
                    b, loc, lessThan(b, loc, next, kSize),
                    [&](OpBuilder &b, Location loc) {
                      Value other = arith::SubIOp::create(
                          b, loc, constIndex(b, loc, 1), buffer);
                      Value group = issue(b, next, other);
                      nvgpu::DeviceAsyncWaitOp::create(b, loc, pending,
                                                       b.getI32IntegerAttr(1));
                      scf::YieldOp::create(b, loc, group);
                    },
                    [&](OpBuilder &b, Location loc) {
                      nvgpu::DeviceAsyncWaitOp::create(b, loc, pending,
                                                       b.getI32IntegerAttr(0));
                      scf::YieldOp::create(b, loc, pending);
                    });
                mlir::gpu::BarrierOp::create(b, loc);
                SmallVector<Value> acc = product.multiply(
                    b, loc, bufferOf(b, loc, tileA, buffer),
                    bufferOf(b, loc, tileB, buffer), args.drop_back());
                // The buffer is refilled by the next iteration's copies.
                auto barrier = mlir::gpu::BarrierOp::create(b, loc);
                if (options.blocksPerSM > 0)
                  barrier->setAttr(hector::kMinBlocksPerSMAttr,
                                   b.getI64IntegerAttr(options.blocksPerSM));
                acc.push_back(prefetch.getResult(0));
                scf::YieldOp::create(b, loc, acc);
              });
          product.emitEpilogue(b, loc, rowBase, colBase,
                               kLoop.getResults().drop_back(), epilogue);
          return;
        }

        // The k loop: store the staged tile, load the next one, multiply.
        SmallVector<Value> init = loadTile(b, c0);
        size_t numStaged = init.size();
        llvm::append_range(init, product.initialAccumulators(b, loc));
        Value td = constIndex(b, loc, s.td);
        auto kLoop = scf::ForOp::create(
            b, loc, c0, kSize, td, init,
            [&](OpBuilder &b, Location loc, Value k0, ValueRange args) {
              storeTile(b, args.take_front(numStaged));
              mlir::gpu::BarrierOp::create(b, loc);
              Value next = arith::AddIOp::create(b, loc, k0, td);
              auto prefetch = scf::IfOp::create(
                  b, loc, lessThan(b, loc, next, kSize),
                  [&](OpBuilder &b, Location) {
                    scf::YieldOp::create(b, loc, loadTile(b, next));
                  },
                  [&](OpBuilder &b, Location) {
                    scf::YieldOp::create(
                        b, loc, SmallVector<Value>(numStaged, zeroVector));
                  });
              SmallVector<Value> acc = product.multiply(
                  b, loc, tileA, tileB, args.drop_front(numStaged));
              mlir::gpu::BarrierOp::create(b, loc);
              SmallVector<Value> yield(prefetch.getResults());
              llvm::append_range(yield, acc);
              scf::YieldOp::create(b, loc, yield);
            });

        product.emitEpilogue(b, loc, rowBase, colBase,
                             kLoop.getResults().drop_front(numStaged),
                             epilogue);
      });
}

} // namespace

int64_t gemm::rowDotLanes(int64_t threadsPerRow) {
  int64_t lanes = 1;
  while (lanes < kWarpSize && threadsPerRow % (lanes * 2) == 0)
    lanes *= 2;
  return lanes;
}

Value RowEpilogue::rowDotVector(OpBuilder &b, Location loc, Value col,
                                Value outCol, int64_t width) const {
  Value vector = GemmOp(op).getRowDot();
  Type element = cast<MemRefType>(vector.getType()).getElementType();
  Value last = b.createOrFold<arith::SubIOp>(loc, fullN, constIndex(b, loc, 1));
  SmallVector<Value> values;
  for (int64_t e = 0; e < width; ++e) {
    Value c = arith::AddIOp::create(b, loc, col, constIndex(b, loc, e));
    Value at = minIndex(
        b, loc, arith::AddIOp::create(b, loc, outCol, constIndex(b, loc, e)),
        last);
    Value a = memref::LoadOp::create(b, loc, vector, ValueRange{type, at});
    values.push_back(arith::SelectOp::create(b, loc, lessThan(b, loc, c, nSize),
                                             a, zeroOf(b, loc, element)));
  }
  if (width == 1)
    return values.front();
  return vector::FromElementsOp::create(
      b, loc, VectorType::get({width}, element), values);
}

Value RowEpilogue::rowDotShare(OpBuilder &b, Location loc, Value value,
                               Value vector) {
  auto contract = arith::FastMathFlags::contract;
  Value product = arith::MulFOp::create(b, loc, value, vector, contract);
  if (!isa<VectorType>(product.getType()))
    return product;
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                     product);
}

void RowEpilogue::addRowDot(OpBuilder &b, Location loc, Value row, Value share,
                            int64_t lanes, Value leader, Value active,
                            Value head) const {
  for (int32_t offset = lanes / 2; offset >= 1; offset /= 2) {
    Value other = mlir::gpu::ShuffleOp::create(b, loc, share, offset, kWarpSize,
                                               mlir::gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    share = arith::AddFOp::create(b, loc, share, other);
  }
  SmallVector<Value> conds{
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, lo, row),
      lessThan(b, loc, row, hi)};
  if (leader)
    conds.push_back(leader);
  if (active)
    conds.push_back(active);
  auto ifOp = scf::IfOp::create(b, loc, andAll(b, loc, conds),
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  if (!head)
    head = constIndex(b, loc, 0);
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, share,
                              GemmOp(op).getRowDotInto(),
                              ValueRange{row, head});
}

void RowEpilogue::addRowDots(OpBuilder &b, Location loc, Value row,
                             ArrayRef<RowDotRun> runs, int64_t run,
                             int64_t lanes, Value laneInRow,
                             Value active) const {
  auto into = cast<MemRefType>(GemmOp(op).getRowDotInto().getType());
  int64_t heads = into.getDimSize(1);
  if (heads == 1) {
    Value share = zeroOf(b, loc, into.getElementType());
    for (const RowDotRun &r : runs)
      share = arith::AddFOp::create(b, loc, share,
                                    rowDotShare(b, loc, r.value, r.vector));
    addRowDot(b, loc, row, share, lanes,
              rowDotLeader(b, loc, laneInRow, lanes), active);
    return;
  }
  // The verifier makes N static and a multiple of the heads.
  int64_t headWidth =
      cast<MemRefType>(GemmOp(op).getOut().getType()).getDimSize(1) / heads;
  auto addAt = [&](Value share, Value col, int64_t groupLanes, Value leader) {
    // Columns past N hold zeros, but would name a head past the last.
    Value inside = lessThan(b, loc, col, nSize);
    Value head = arith::DivUIOp::create(b, loc, outColumn(b, loc, col),
                                        constIndex(b, loc, headWidth));
    addRowDot(b, loc, row, share, groupLanes, leader,
              active ? arith::AndIOp::create(b, loc, active, inside) : inside,
              head);
  };
  if (headWidth % run != 0) {
    for (const RowDotRun &r : runs)
      for (int64_t e = 0; e < run; ++e) {
        Value value = r.value, vector = r.vector;
        if (run > 1) {
          value =
              vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{e});
          vector =
              vector::ExtractOp::create(b, loc, vector, ArrayRef<int64_t>{e});
        }
        addAt(rowDotShare(b, loc, value, vector),
              arith::AddIOp::create(b, loc, r.col, constIndex(b, loc, e)), 1,
              Value());
      }
    return;
  }
  int64_t groupLanes = lanes;
  while (groupLanes > 1 && headWidth % (groupLanes * run) != 0)
    groupLanes /= 2;
  Value leader = rowDotLeader(b, loc, laneInRow, groupLanes);
  for (const RowDotRun &r : runs)
    addAt(rowDotShare(b, loc, r.value, r.vector), r.col, groupLanes, leader);
}

Value RowEpilogue::outColumn(OpBuilder &b, Location loc, Value col) const {
  return arith::AddIOp::create(b, loc, outColBase, col);
}

Value RowEpilogue::writes(OpBuilder &b, Location loc, Value row, Value col,
                         Value active) const {
  SmallVector<Value> conds{
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, lo, row),
      lessThan(b, loc, row, hi), lessThan(b, loc, col, nSize)};
  if (active)
    conds.push_back(active);
  return andAll(b, loc, conds);
}

void RowEpilogue::store(OpBuilder &b, Location loc, Value row, Value col,
                        Value outCol, Value active, Value value) const {
  auto ifOp = scf::IfOp::create(b, loc, writes(b, loc, row, col, active),
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  auto type = cast<VectorType>(value.getType());
  int64_t width = type.getNumElements();
  GemmOp gemm = op;
  Value out = gemm.getOut(), outRows = gemm.getOutRows(),
        scale = gemm.getRowScale();
  Value o = outRows ? loadIndex(b, loc, outRows, row) : row;
  auto column = [&](int64_t e) {
    return arith::AddIOp::create(b, loc, outCol, constIndex(b, loc, e));
  };
  if (scale) {
    SmallVector<Value> scales;
    for (int64_t e = 0; e < width; ++e)
      scales.push_back(rowScaleAt(b, loc, scale, fullN, row, column(e)));
    value = arith::MulFOp::create(
        b, loc, value, vector::FromElementsOp::create(b, loc, type, scales));
  }
  if (gemm.getAtomic()) {
    for (int64_t e = 0; e < width; ++e)
      memref::AtomicRMWOp::create(
          b, loc, arith::AtomicRMWKind::addf,
          vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{e}), out,
          ValueRange{o, column(e)});
    return;
  }
  if (gemm.getAccumulate())
    value = arith::AddFOp::create(
        b, loc, loadVector(b, loc, out, {o, outCol}, width), value);
  storeVector(b, loc, value, out, {o, outCol});
}

LogicalResult hector::gpu::checkGemm(GemmOp op) {
  if (op->getParentOfType<mlir::gpu::LaunchOp>() ||
      op->getParentOfType<mlir::gpu::GPUFuncOp>())
    return op.emitOpError("must be in host code to become a GPU launch (it is "
                          "nested in a kernel)");
  return getSchedule(op);
}

/// The product of the vector kernel: tensor cores where asked for and the
/// block can be tiled by warps, else FMAs.
static std::unique_ptr<TileProduct>
getVectorProduct(GemmOp op, const Schedule &s, GemmPrecision precision) {
  if (precision == GemmPrecision::TF32) {
    WeightLayout w = getWeightLayout(op);
    Value weight = weightOf(op);
    if (std::unique_ptr<TileProduct> product = createTensorCoreProduct(
            op.getTile(), op.getLaunchBounds(), staticSize(weight, w.kDim),
            staticSize(weight, w.nDim), w.transposed))
      return product;
  }
  return std::make_unique<FmaProduct>(s);
}

void hector::gpu::lowerGemm(RewriterBase &rewriter, GemmOp op,
                            const GemmOptions &options) {
  FailureOr<Schedule> schedule = getSchedule(op); // checked before
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  // The row dot is added up atomically (RowEpilogue::addRowDot).
  if (Value into = op.getRowDotInto())
    emitZeroFill(rewriter, op.getLoc(), into, op.getLaunchBounds());
  if (op.isOuterProduct()) {
    lowerOuterProductGemm(rewriter, op, *schedule);
  } else if (std::optional<Schedule> vector = getVectorSchedule(op)) {
    // The vector kernel where every operand starts 16-byte aligned, else
    // the general one (both in the binary; the host picks per call).
    Location loc = op.getLoc();
    Value aligned = andAll(rewriter, loc,
                           {startsAligned(rewriter, loc, op.getLhs()),
                            startsAligned(rewriter, loc, op.getRhs()),
                            startsAligned(rewriter, loc, op.getOut())});
    auto ifOp = scf::IfOp::create(rewriter, loc, aligned,
                                  /*withElseRegion=*/true);
    rewriter.setInsertionPointToStart(ifOp.thenBlock());
    lowerRowGemmVector(rewriter, op,
                       *getVectorProduct(op, *vector, options.precision),
                       options);
    rewriter.setInsertionPointToStart(ifOp.elseBlock());
    lowerRowGemm(rewriter, op, *schedule);
  } else {
    lowerRowGemm(rewriter, op, *schedule);
  }
  rewriter.eraseOp(op);
}
