//===- GemmTensorCore.cpp - TF32 tensor-core tile product -------*- C++ -*-===//
//
// The product of the row-mode vector kernel on tensor cores
// (`--precision=tf32`): the block tile is split over the warps, each warp
// owns tilesM x tilesN tiles of 16 x 8 outputs and advances them by one
// nvgpu.mma.sync (m16n8k8, TF32 inputs, fp32 accumulators) per 8 depths.
// The kernel stages A and B as for the FMA product, with the inputs rounded
// to TF32 on their way to shared memory (once per element and block,
// rather than once per fragment load) and paddings that make the fragment
// loads conflict-free; a weight stored [N, K] is staged column by column,
// like A.
//
// Fragments of m16n8k8 (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32),
// lane = 4 g + t:
//   A (16 x 8, row-major): a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4),
//                          a3 = (g + 8, t + 4)
//   B (8 x 8, k x n):      b0 = (t, g), b1 = (t + 4, g)
//   C (16 x 8):            c0, c1 = (g, 2t .. 2t + 1),
//                          c2, c3 = (g + 8, 2t .. 2t + 1)
// nvgpu.mma.sync takes them as vector<4x1xf32> (a0..a3), vector<2x1xf32>
// (b0, b1) and vector<2x2xf32> ([c0, c1], [c2, c3]).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>

using namespace mlir;
using namespace hector::gpu;
using namespace hector::gpu::gemm;

namespace {
// (mlir::nvgpu has a kWarpSize too.)
using hector::gpu::kWarpSize;

/// The shape of one nvgpu.mma.sync: outputs 16 x 8, depth 8.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 8;
/// Rows of A, and of B staged by columns, are td + 4 floats apart (td a
/// multiple of 8): the 8 rows g of a fragment load fall on 8 distinct
/// groups of 4 banks, the 4 depths t within a group, so its 32 lanes hit
/// 32 banks.
constexpr int64_t kDepthPad = 4;

/// How the warps of a block tile its outputs.
struct WarpTiling {
  int64_t warpsM = 0, warpsN = 0; // warps along rows and columns
  int64_t tilesM = 0, tilesN = 0; // mma tiles of a warp along rows, columns
  int64_t warps() const { return warpsM * warpsN; }
  /// Shared loads of a warp per k-step: 4 per A fragment, 2 per B fragment.
  int64_t loadsPerStep() const { return 4 * tilesM + 2 * tilesN; }
};

/// The warp grid over a tm x tn tile that keeps the most warps busy, then
/// loads the fewest fragments per mma; nullopt when no grid fits (a tile
/// that is not made of 16 x 8 tiles, or too many accumulators per thread).
std::optional<WarpTiling> tileWarps(int64_t tm, int64_t tn, int64_t warps) {
  int64_t rowTiles = tm / kMmaM, colTiles = tn / kMmaN;
  std::optional<WarpTiling> best;
  for (int64_t wm = 1; wm <= std::min(warps, rowTiles); ++wm) {
    if (rowTiles % wm != 0)
      continue;
    for (int64_t wn = 1; wm * wn <= warps && wn <= colTiles; ++wn) {
      if (colTiles % wn != 0)
        continue;
      WarpTiling t{wm, wn, rowTiles / wm, colTiles / wn};
      if (t.tilesM * t.tilesN * kMmaM * kMmaN / kWarpSize >
          kMaxOutputsPerThread)
        continue;
      if (!best || t.warps() > best->warps() ||
          (t.warps() == best->warps() &&
           t.loadsPerStep() < best->loadsPerStep()))
        best = t;
    }
  }
  return best;
}

/// A fragment vector<N x 1 x f32> of the scalars `elements`.
Value fragment(OpBuilder &b, Location loc, ArrayRef<Value> elements) {
  auto type = VectorType::get({static_cast<int64_t>(elements.size()), 1},
                              b.getF32Type());
  Value result = arith::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0)));
  for (auto [r, element] : llvm::enumerate(elements))
    result = vector::InsertOp::create(
        b, loc, element, result, ArrayRef<int64_t>{static_cast<int64_t>(r), 0});
  return result;
}

class TensorCoreProduct final : public TileProduct {
public:
  TensorCoreProduct(const Schedule &s, WarpTiling tiling, bool weightColumns)
      : TileProduct(s), tiling(tiling), weightColumns(weightColumns) {}

  SmallVector<MemRefType> tileTypes(Type element) const override {
    return {workgroupType({s.tm, s.td + kDepthPad}, element),
            weightColumns ? workgroupType({s.tn, s.td + kDepthPad}, element)
                          : workgroupType({s.td, s.tn + columnPad()}, element)};
  }
  bool stagesWeightColumns() const override { return weightColumns; }
  bool roundsToTF32() const override { return true; }

  int64_t sharedBytes() const {
    int64_t floats = s.tm * (s.td + kDepthPad) +
                     (weightColumns ? s.tn * (s.td + kDepthPad)
                                    : s.td * (s.tn + columnPad()));
    return floats * 4;
  }

  void setUp(OpBuilder &b, Location loc, Value thread) override {
    auto index = [&](int64_t v) { return constIndex(b, loc, v); };
    Value warp = arith::DivUIOp::create(b, loc, thread, index(kWarpSize));
    Value lane = arith::RemUIOp::create(b, loc, thread, index(kWarpSize));
    Value group = arith::DivUIOp::create(b, loc, lane, index(4));
    inGroup = arith::RemUIOp::create(b, loc, lane, index(4));
    Value warpRow = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, warp, index(tiling.warpsN)),
        index(tiling.tilesM * kMmaM));
    Value warpCol = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, warp, index(tiling.warpsN)),
        index(tiling.tilesN * kMmaN));
    groupRow = arith::AddIOp::create(b, loc, warpRow, group);
    groupCol = arith::AddIOp::create(b, loc, warpCol, group);
    pairCol = arith::AddIOp::create(
        b, loc, warpCol, arith::MulIOp::create(b, loc, inGroup, index(2)));
    if (tiling.warps() * kWarpSize < s.threads)
      active = lessThan(b, loc, thread, index(tiling.warps() * kWarpSize));
  }

  SmallVector<Value> initialAccumulators(OpBuilder &b, Location loc) override {
    auto type = accumulatorType(b);
    Value zero = arith::ConstantOp::create(
        b, loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0)));
    return SmallVector<Value>(tiling.tilesM * tiling.tilesN, zero);
  }

  SmallVector<Value> multiply(OpBuilder &b, Location loc, Value tileA,
                              Value tileB, ValueRange acc) override {
    auto body = [&](OpBuilder &b) {
      auto index = [&](int64_t v) { return constIndex(b, loc, v); };
      auto plus = [&](Value x, int64_t v) {
        return arith::AddIOp::create(b, loc, x, index(v));
      };
      auto load = [&](Value tile, Value i, Value j) -> Value {
        return memref::LoadOp::create(b, loc, tile, ValueRange{i, j});
      };
      // B at depth k, column n.
      auto loadB = [&](Value k, Value n) {
        return weightColumns ? load(tileB, n, k) : load(tileB, k, n);
      };
      SmallVector<Value> next(acc.begin(), acc.end());
      for (int64_t k0 = 0; k0 < s.td; k0 += kMmaK) {
        Value kLo = plus(inGroup, k0), kHi = plus(inGroup, k0 + 4);
        SmallVector<Value> a, w;
        for (int64_t i = 0; i < tiling.tilesM; ++i) {
          Value top = plus(groupRow, i * kMmaM), bottom = plus(top, 8);
          a.push_back(
              fragment(b, loc,
                       {load(tileA, top, kLo), load(tileA, bottom, kLo),
                        load(tileA, top, kHi), load(tileA, bottom, kHi)}));
        }
        for (int64_t j = 0; j < tiling.tilesN; ++j) {
          Value col = plus(groupCol, j * kMmaN);
          w.push_back(fragment(b, loc, {loadB(kLo, col), loadB(kHi, col)}));
        }
        for (int64_t i = 0; i < tiling.tilesM; ++i)
          for (int64_t j = 0; j < tiling.tilesN; ++j) {
            Value &c = next[i * tiling.tilesN + j];
            c = nvgpu::MmaSyncOp::create(b, loc, a[i], w[j], c,
                                         ArrayRef<int64_t>{kMmaM, kMmaN, kMmaK},
                                         /*tf32Enabled=*/true);
          }
      }
      return next;
    };
    // Warp-uniform: whole warps skip, so mma.sync never sees a partial warp.
    return updateWhere(b, loc, active, acc, body);
  }

  void emitEpilogue(OpBuilder &b, Location loc, Value rowBase, Value colBase,
                    ValueRange acc, const RowEpilogue &epilogue) override {
    auto index = [&](int64_t v) { return constIndex(b, loc, v); };
    Value firstRow = arith::AddIOp::create(b, loc, rowBase, groupRow);
    Value firstCol = arith::AddIOp::create(b, loc, colBase, pairCol);
    for (int64_t j = 0; j < tiling.tilesN; ++j) {
      Value col = arith::AddIOp::create(b, loc, firstCol, index(j * kMmaN));
      Value outCol = epilogue.outColumn(b, loc, col);
      for (int64_t i = 0; i < tiling.tilesM; ++i)
        for (int64_t half = 0; half < 2; ++half) {
          Value row = arith::AddIOp::create(b, loc, firstRow,
                                            index(i * kMmaM + half * 8));
          Value pair = vector::ExtractOp::create(
              b, loc, acc[i * tiling.tilesN + j], ArrayRef<int64_t>{half});
          epilogue.store(b, loc, row, col, outCol, active, pair);
        }
    }
    if (!epilogue.hasRowDot())
      return;
    // Row dot: a lane holds 2 columns of rows g and g + 8 of each mma tile;
    // the 4 lanes t of a group hold the tile's 8 columns, the warp's tiles
    // along n its other columns (summed in the thread), and the warps of a
    // grid row the block's others (added atomically).
    SmallVector<Value> cols, a;
    for (int64_t j = 0; j < tiling.tilesN; ++j) {
      Value col = arith::AddIOp::create(b, loc, firstCol, index(j * kMmaN));
      cols.push_back(col);
      a.push_back(epilogue.rowDotVector(b, loc, col,
                                        epilogue.outColumn(b, loc, col), 2));
    }
    for (int64_t i = 0; i < tiling.tilesM; ++i)
      for (int64_t half = 0; half < 2; ++half) {
        Value row = arith::AddIOp::create(b, loc, firstRow,
                                          index(i * kMmaM + half * 8));
        SmallVector<RowEpilogue::RowDotRun> runs;
        for (int64_t j = 0; j < tiling.tilesN; ++j)
          runs.push_back({vector::ExtractOp::create(
                              b, loc, acc[i * tiling.tilesN + j],
                              ArrayRef<int64_t>{half}),
                          a[j], cols[j]});
        epilogue.addRowDots(b, loc, row, runs, /*run=*/2, /*lanes=*/4,
                            inGroup, active);
      }
  }

private:
  /// Rows of B staged [td][tn + pad] are ≡ 8 (mod 16) floats apart: the 4
  /// depths t of a fragment load fall on distinct groups of 8 banks, the 8
  /// columns g within a group.
  int64_t columnPad() const { return s.tn % 16 == 0 ? 8 : 0; }

  static VectorType accumulatorType(OpBuilder &b) {
    return VectorType::get({2, 2}, b.getF32Type());
  }

  WarpTiling tiling;
  bool weightColumns; // B staged [tn][td + 4] from a weight stored [N, K]
  Value inGroup;      // t: the lane within its group of 4
  Value groupRow;     // the warp's first row + g: row of a0 in tile 0
  Value groupCol;     // the warp's first column + g: column of b0 in tile 0
  Value pairCol;      // the warp's first column + 2t: columns of c0, c1
  Value active;       // the thread's warp has tiles (null: every warp)
};
} // namespace

std::unique_ptr<TileProduct>
gemm::createTensorCoreProduct(ArrayRef<int64_t> tile, int64_t threads,
                              int64_t k, int64_t n, bool transposedWeight) {
  if (k <= 0 || n <= 0 || threads % kWarpSize != 0 || tile[0] % kMmaM != 0)
    return nullptr;
  Schedule s;
  s.tm = tile[0];
  s.tn = std::min(tile[1], fitPowerOfTwo(n, kMmaN));
  // Depth: the tile's k in whole k-steps, at most K rounded up to one.
  s.td = std::min<int64_t>(llvm::alignTo(std::max(tile[2], kMmaK), kMmaK),
                           llvm::alignTo(k, kMmaK));
  s.threads = threads;
  if (s.tn % kMmaN != 0)
    return nullptr;
  std::optional<WarpTiling> tiling = tileWarps(s.tm, s.tn, threads / kWarpSize);
  if (!tiling)
    return nullptr;
  auto product =
      std::make_unique<TensorCoreProduct>(s, *tiling, transposedWeight);
  if (product->sharedBytes() > kMaxSharedBytes)
    return nullptr;
  return product;
}
