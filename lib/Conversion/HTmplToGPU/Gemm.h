//===- Gemm.h - GEMM kernel internals ---------------------------*- C++ -*-===//
//
// Shared by the GEMM kernels of htmpl-to-gpu: GemmToGPU.cpp builds the
// launches, the staging through shared memory and the epilogues;
// GemmTensorCore.cpp the tensor-core product of the row-mode vector kernel.
// The vector kernel stages its tiles the same way whatever multiplies them:
// a TileProduct says how the threads multiply the staged tiles and which
// results each thread holds (docs/gpu-templates.md, "GEMM").
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HTMPLTOGPU_GEMM_H
#define HECTOR_LIB_CONVERSION_HTMPLTOGPU_GEMM_H

#include "GPULowering.h"

#include <memory>

namespace hector::gpu::gemm {

/// Largest register block (outputs per thread).
constexpr int64_t kMaxOutputsPerThread = 64;
/// Shared memory a GEMM kernel may use (the default limit without opt-in).
constexpr int64_t kMaxSharedBytes = 48 * 1024;

/// The thread-level shape of one kernel.
struct Schedule {
  int64_t tm = 0, tn = 0, td = 0; // block tile: rows, columns, depth
  int64_t cm = 0, cn = 0;         // register block per thread
  int64_t threadsN = 0;           // threads along the columns
  int64_t threadsM = 0;           // threads along the rows
  int64_t threads = 0;            // threads per block (launch_bounds)
  int64_t active() const { return threadsM * threadsN; }
};

/// Largest power of two not below `size` (at least `floor`).
int64_t fitPowerOfTwo(int64_t size, int64_t floor);

mlir::Value lessThan(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                     mlir::Value bound);

/// The accumulators `body` computes where `active` holds (null: for every
/// thread), `acc` unchanged elsewhere: threads (or whole warps) beyond a
/// small tile skip the product of a k-tile.
llvm::SmallVector<mlir::Value> updateWhere(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value active,
    mlir::ValueRange acc,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &)>
        body);

/// The epilogue of a row-mode vector kernel on one segment piece: where a
/// thread's results go once the reduction is done.
struct RowEpilogue {
  htmpl::GemmOp op;
  mlir::Value lo, hi;       // the piece's instance rows
  mlir::Value nSize, fullN; // columns of a head, of all heads
  mlir::Value outColBase;   // first output column of the block's head
  mlir::Value type;         // the piece's segment (0 without segments)

  /// Whether the instance has the row-dot epilogue (row_dot ... into).
  bool hasRowDot() const { return htmpl::GemmOp(op).getRowDot() != nullptr; }
  /// The row-dot vector a[type, outCol + e] for the `width` block columns
  /// col + e a thread holds (a vector, or a scalar for width 1); 0 for
  /// columns not below N. Loaded once per piece and column group.
  mlir::Value rowDotVector(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value col, mlir::Value outCol,
                           int64_t width) const;
  /// Σ_e value[e] · vector[e]: a thread's share of its row's dot. Rows and
  /// columns outside the data hold zero accumulators (the loaders stage
  /// zeros there), so no guard is needed.
  static mlir::Value rowDotShare(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value value, mlir::Value vector);
  /// Sums `share` over the `lanes` consecutive lanes that hold row `row`
  /// (a power of two up to 32, aligned to it) with xor shuffles, and the
  /// first of them (`leader`; null when lanes is 1) adds the sum to
  /// s[row, head] (head null: 0) atomically when the row is in the piece
  /// and `active` (null: always) holds. Every lane of the warp must reach
  /// it. Atomics, and s cleared before the launch, because the threads,
  /// warps or blocks that hold one row's columns may be several (column
  /// tiles narrower than N, tensor-core warp grids).
  void addRowDot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value row,
                 mlir::Value share, int64_t lanes, mlir::Value leader,
                 mlir::Value active, mlir::Value head = {}) const;

  /// One run of consecutive columns of a row that a thread holds: its
  /// accumulators and row-dot vector (scalars, or vectors of the run's
  /// length) and the block column of its first element.
  struct RowDotRun {
    mlir::Value value, vector, col;
  };
  /// Adds row `row`'s dot (one per head) from the thread's runs of `run`
  /// columns each; `lanes` consecutive lanes (laneInRow their index among
  /// the row's lanes) hold consecutive runs. With one head the thread sums
  /// its runs and the lanes reduce once; with H heads a group of lanes
  /// reduces together only while its columns stay inside one head, so the
  /// group shrinks to fit the head width (a run that straddles two heads
  /// is split into elements, each thread adding its own).
  void addRowDots(mlir::OpBuilder &b, mlir::Location loc, mlir::Value row,
                  llvm::ArrayRef<RowDotRun> runs, int64_t run, int64_t lanes,
                  mlir::Value laneInRow, mlir::Value active) const;

  /// The output column of the block's column `col`.
  mlir::Value outColumn(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value col) const;
  /// Whether instance row `row` is in the piece, block column `col` below N
  /// and `active` (null: always) true: the result is then written.
  mlir::Value writes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value row,
                     mlir::Value col, mlir::Value active) const;
  /// Writes `value`, a vector of the results of instance row `row` at the
  /// block's columns col, col + 1, ... (output columns outCol, ...): row
  /// scale, scatter and store, accumulate or atomic add. Nothing is written
  /// when the row is outside the piece, `col` is not below N or `active`
  /// (null: always) is false. Vectors start on a multiple of their width.
  void store(mlir::OpBuilder &b, mlir::Location loc, mlir::Value row,
             mlir::Value col, mlir::Value outCol, mlir::Value active,
             mlir::Value value) const;
};

/// The lanes that share a row when `threadsPerRow` consecutive threads
/// hold its columns: the largest power of two dividing it, at most a warp.
int64_t rowDotLanes(int64_t threadsPerRow);

/// How the threads of the row-mode vector kernel multiply its staged tiles.
/// The kernel stages A as [tm][td + 4] (rows of the gathered lhs, row-major)
/// and B as [td][tn + pad], or as [tn][td + pad] when the product asks for
/// it and the weight is stored [N, K]; it calls setUp once at the top of
/// the kernel, multiply once per staged k-tile and emitEpilogue once per
/// segment piece.
class TileProduct {
public:
  explicit TileProduct(const Schedule &s) : s(s) {}
  virtual ~TileProduct() = default;

  /// The block tile the kernel stages (tm, tn, td) and its threads.
  const Schedule &schedule() const { return s; }
  /// The shared tiles A and B.
  virtual llvm::SmallVector<mlir::MemRefType>
  tileTypes(mlir::Type element) const = 0;
  /// Whether a weight stored [N, K] is staged column by column,
  /// [tn][td + pad] (16-byte stores), instead of transposed into
  /// [td][tn + pad].
  virtual bool stagesWeightColumns() const { return false; }
  /// Whether staged values are rounded to TF32 (round to nearest, ties
  /// away from zero) on their way to shared memory.
  virtual bool roundsToTF32() const { return false; }

  /// Computes the thread's coordinates from its id in the block.
  virtual void setUp(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Value thread) = 0;
  /// The zero accumulators of a segment piece.
  virtual llvm::SmallVector<mlir::Value>
  initialAccumulators(mlir::OpBuilder &b, mlir::Location loc) = 0;
  /// acc += A · B over the staged k-tile (block-uniform control flow).
  virtual llvm::SmallVector<mlir::Value>
  multiply(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tileA,
           mlir::Value tileB, mlir::ValueRange acc) = 0;
  /// Hands every result vector of the thread to `epilogue`, with its
  /// instance row and block column (the block's tile starts at row
  /// `rowBase` and column `colBase`).
  virtual void emitEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value rowBase, mlir::Value colBase,
                            mlir::ValueRange acc,
                            const RowEpilogue &epilogue) = 0;

protected:
  Schedule s;
};

/// The TF32 tensor-core product (nvgpu.mma.sync) of a row-mode GEMM whose
/// weight block is `k` x `n` (static multiples of 4; `transposedWeight`:
/// stored [N, K]), for the instance's tile and launch bounds; null when its
/// warps cannot tile the block (the FMA product is then used).
std::unique_ptr<TileProduct>
createTensorCoreProduct(llvm::ArrayRef<int64_t> tile, int64_t threads,
                        int64_t k, int64_t n, bool transposedWeight);

} // namespace hector::gpu::gemm

#endif // HECTOR_LIB_CONVERSION_HTMPLTOGPU_GEMM_H
