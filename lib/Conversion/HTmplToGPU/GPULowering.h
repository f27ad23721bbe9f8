//===- GPULowering.h - htmpl-to-gpu internals -------------------*- C++ -*-===//
//
// Shared by the GEMM and traversal kernels of the htmpl-to-gpu pass
// (docs/gpu-templates.md describes the kernels).
//
// Rules every generated kernel follows:
//  - Host code only computes launch sizes, from memref.dim (descriptor
//    metadata): it never reads a buffer, because every buffer is device
//    memory. Whatever depends on buffer contents (segment offsets, CSR row
//    pointers) is read inside the kernel.
//  - A launch has at least one block, so a grid computed from an empty
//    operand is still a valid launch; the kernel's own bounds checks then
//    make it do nothing.
//  - Threads per block are the instance's launch_bounds (1-D blocks).
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HTMPLTOGPU_GPULOWERING_H
#define HECTOR_LIB_CONVERSION_HTMPLTOGPU_GPULOWERING_H

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace hector::gpu {

/// Warp width of the targets (NVIDIA).
constexpr int64_t kWarpSize = 32;

using templates::constIndex;
using templates::dimOf;
using templates::inlineBody;
using templates::loadIndex;
using templates::searchOffsets;
using templates::weightIndices;

inline mlir::Value constI32(mlir::OpBuilder &b, mlir::Location loc,
                            int32_t value) {
  return mlir::arith::ConstantIntOp::create(b, loc, value, 32);
}

/// ceil(a / b) for non-negative a and positive b.
mlir::Value ceilDiv(mlir::OpBuilder &b, mlir::Location loc, mlir::Value a,
                    mlir::Value divisor);

mlir::Value minIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value a,
                     mlir::Value c);
mlir::Value maxIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value a,
                     mlir::Value c);

/// The conjunction of `conds` (i1; at least one).
mlir::Value andAll(mlir::OpBuilder &b, mlir::Location loc,
                   llvm::ArrayRef<mlir::Value> conds);

/// Whether `memref`'s first element sits on a `bytes`-byte boundary (host
/// code: reads the descriptor only). The 16-byte kernels of GEMMs and
/// traversals run only where this holds (the host picks per call).
mlir::Value startsAligned(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value memref, int64_t bytes = 16);

/// The zero of an integer or float type.
mlir::Value zeroOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);

/// A 1-D launch of `threads` threads per block on a (gx, gy, gz) grid, each
/// grid size raised to at least 1, with one workgroup (shared memory) buffer
/// per entry of `shared`. The builder is left at the start of the kernel
/// body, before its terminator; the builder's previous insertion point is
/// not restored (use an InsertionGuard).
struct Launch {
  mlir::gpu::LaunchOp op;
  mlir::Value blockX, blockY, blockZ, thread;
  llvm::SmallVector<mlir::Value> shared;
};
Launch createLaunch(mlir::OpBuilder &b, mlir::Location loc, mlir::Value gx,
                    mlir::Value gy, mlir::Value gz, int64_t threads,
                    llvm::ArrayRef<mlir::MemRefType> shared = {});

/// A 1-D launch with one thread per item of [0, count): `id` is the thread's
/// global index and `inside` whether it is below `count` (the last block may
/// be partial). The builder is left as createLaunch leaves it.
struct FlatLaunch {
  Launch launch;
  mlir::Value id, inside;
};
FlatLaunch createFlatLaunch(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value count, int64_t threads);

/// A static memref type in workgroup (shared) memory.
mlir::MemRefType workgroupType(llvm::ArrayRef<int64_t> shape,
                               mlir::Type element);

/// A kernel that sets every element of `buffer` to zero (the rank is
/// arbitrary; elements are enumerated linearly).
void emitZeroFill(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer,
                  int64_t threads);

/// Fails (with a diagnostic at the instance) when the instance cannot be
/// lowered; called on every instance before any IR changes.
mlir::LogicalResult checkGemm(htmpl::GemmOp op);
/// `lanes`: lanes per instance of warp-mapped traversals (0: chosen per
/// traversal; see Traversal.h).
mlir::LogicalResult checkTraversal(htmpl::TraversalOp op, int64_t lanes = 0);

/// The arithmetic of row-mode GEMM products: fp32 FMAs (exact to fp32
/// rounding), or TF32 tensor cores (inputs rounded to 10 mantissa bits,
/// fp32 accumulation) where the vector kernel runs.
enum class GemmPrecision { FP32, TF32 };

/// How the GEMM kernels are built: htmpl-to-gpu's options (their defaults
/// are the pass's, Passes.td).
struct GemmOptions {
  GemmPrecision precision;
  /// The fp32 vector kernel stages its tiles by asynchronous copies
  /// (cp.async) rather than through registers.
  bool asyncStaging;
  /// Blocks per SM the asynchronously staged kernels ask ptxas to fit
  /// (0: no request; kMinBlocksPerSMAttr).
  int64_t blocksPerSM;
};

/// Replace one (checked) instance by kernel launches before it.
void lowerGemm(mlir::RewriterBase &rewriter, htmpl::GemmOp op,
               const GemmOptions &options);
void lowerTraversal(mlir::RewriterBase &rewriter, htmpl::TraversalOp op,
                    int64_t lanes = 0);
/// One warp per destination (SoftmaxAggregateToGPU.cpp); every verified
/// instance lowers.
void lowerSoftmaxAggregate(mlir::RewriterBase &rewriter,
                           htmpl::SoftmaxAggregateOp op);

} // namespace hector::gpu

#endif // HECTOR_LIB_CONVERSION_HTMPLTOGPU_GPULOWERING_H
