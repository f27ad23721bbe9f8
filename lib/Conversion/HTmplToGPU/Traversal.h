//===- Traversal.h - htmpl-to-gpu traversal internals -----------*- C++ -*-===//
//
// The plan of a traversal kernel (TraversalPlan.cpp decides it, before any
// IR changes) and the warp-level rewriting of an inlined body (WarpBody.cpp),
// shared with the kernel skeletons of TraversalToGPU.cpp.
//
// Two mappings:
//  - Warp: a group of lanes (the whole warp, or 4, 8 or 16 lanes of it:
//    TraversalPlan::lanes) runs one instance (edge or node) at a time; its
//    lanes split the iterations of the body's innermost loops (the feature
//    loops); everything outside them runs redundantly on the group's lanes,
//    so it stays uniform within the group, and its side effects are issued
//    by the group's first lane. Loop-carried reductions (dot products)
//    become per-lane partials plus a butterfly all-reduce within the group.
//    For edges, a group walks a contiguous chunk of edges, and
//    accumulations into the receiving row (the destination node, or the
//    edge type) are gathered in a group-private shared-memory row that is
//    flushed with one atomic per element when that row changes. Groups
//    smaller than a warp share the per-instance work (index loads, scalar
//    math, the reductions' shuffles) between several instances per
//    instruction: on 64-wide rows a full warp spends most of its issue slots
//    on that per-edge overhead, two features per lane.
//  - Thread: one instance per thread, the body unchanged; top-level
//    accumulations into the receiving row are combined across the lanes of
//    a warp that share it (segmented warp reduction) before one atomic.
//    Used for bodies without a feature loop (scalar bodies) and for bodies
//    the warp mapping cannot prove safe.
//
// The receiving rows that pay off are those that repeat on consecutive
// edges: the destination (canonical order is sorted by (edge type,
// destination, source); CSR groups by destination) and the edge type
// (sorted in COO order). Accumulations into the source node, whose equal
// rows are scattered over the edge order, go straight to global atomics:
// a warp-private row would be flushed after almost every edge.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HTMPLTOGPU_TRAVERSAL_H
#define HECTOR_LIB_CONVERSION_HTMPLTOGPU_TRAVERSAL_H

#include "GPULowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace hector::gpu {

enum class TraversalMode { Warp, Thread };

/// A destination whose accumulations a warp gathers in shared memory.
struct BufferedDest {
  mlir::Value dest;
  htmpl::Reduction kind;
  int64_t size = 0; // elements of one destination row (static)
  /// Every accumulation site (lane 0 in warp-uniform code, or a distributed
  /// loop whose iterations hit distinct elements) gives each element to one
  /// lane: plain read-modify-writes with a warp barrier after each site.
  /// Otherwise shared-memory atomics.
  bool plain = false;
};

/// Elements between the shared rows of two lane groups: the row rounded up
/// to the 32 banks, plus the group width when groups share a warp, so that
/// the groups of one warp start on different banks (lane l of group g then
/// hits bank g * lanes + l: no conflicts).
inline int64_t groupRowStride(int64_t rowSize, int64_t lanes) {
  if (lanes >= kWarpSize)
    return rowSize;
  return (rowSize + kWarpSize - 1) / kWarpSize * kWarpSize + lanes;
}

struct TraversalPlan {
  TraversalMode mode = TraversalMode::Thread;
  /// Edges: the row scheme of the buffered or reduced accumulations (`dst`
  /// or `etype`); they all share it, since it decides when to flush.
  htmpl::AccessScheme receiver = htmpl::AccessScheme::Dst;
  /// Warp mode: the scf.for loops whose iterations are split over lanes.
  llvm::SmallPtrSet<mlir::Operation *, 8> distributed;
  /// Warp mode: distributed loops after which the group synchronises,
  /// because another loop stores into the same buffer (possibly at the same
  /// element, which the later loop must write last).
  llvm::SmallPtrSet<mlir::Operation *, 4> syncAfterStores;
  /// Warp mode: lanes per instance (a power of two dividing the warp).
  int64_t lanes = kWarpSize;
  /// Warp mode over edges: destinations gathered per warp.
  llvm::SmallVector<BufferedDest> buffered;
  /// Thread mode over edges: top-level accumulations into the receiving
  /// row, reduced across the warp.
  llvm::SmallVector<htmpl::AccumulateOp> reduced;
};

/// Checks the traversal (diagnostic on failure) and chooses its mapping.
/// `lanes` (a power of two from 1 to 32) fixes the lanes per instance of the
/// warp mapping; 0 lets the plan choose from the feature loops' lengths.
mlir::FailureOr<TraversalPlan> planTraversal(htmpl::TraversalOp op,
                                             int64_t lanes = 0);

/// The op combining iter_arg `i` of `loop` into its next value when that is
/// a reduction the warp can finish with shuffles (a commutative, associative
/// arith op on 32-bit values, whose operand and result are used nowhere
/// else), else null.
mlir::Operation *matchReduction(mlir::scf::ForOp loop, unsigned i);

/// The innermost distributed loop around `op`, or null.
mlir::scf::ForOp enclosingDistributed(mlir::Operation *op,
                                      const TraversalPlan &plan);

/// The node count of a node traversal comes from this operand.
mlir::Value nodeCountSource(htmpl::TraversalOp op);

/// Combines two values the way `kind` reduces them.
mlir::Value combine(mlir::OpBuilder &b, mlir::Location loc,
                    htmpl::Reduction kind, mlir::Value x, mlir::Value y);
/// The neutral element of `kind` for `type`.
mlir::Value identityOf(mlir::OpBuilder &b, mlir::Location loc,
                       htmpl::Reduction kind, mlir::Type type);
/// The atomic read-modify-write that applies `kind`.
mlir::arith::AtomicRMWKind atomicKind(htmpl::Reduction kind, mlir::Type type);

/// An atomic read-modify-write of memref[indices]. Float max becomes a
/// relaxed LLVM atomicrmw scoped to the device (global memory) or the block
/// (shared memory): memref.atomic_rmw would lower it to a compare-and-swap
/// loop with acquire-release ordering at system scope. Other kinds (native
/// relaxed atomics on NVPTX) stay memref.atomic_rmw.
void emitAtomic(mlir::OpBuilder &b, mlir::Location loc,
                mlir::arith::AtomicRMWKind kind, mlir::Value value,
                mlir::Value memref, mlir::ValueRange indices);

/// `nvvm.bar.warp.sync` over the lanes of `mask` (i32; null: the full
/// warp): orders the lanes' accesses to group-private shared memory.
void emitWarpSync(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::Value mask = nullptr);

/// Features per lane in a row of the 16-byte variant of a warp-mapped
/// traversal: 4 floats, one 128-bit load or store where the rows start on
/// 16-byte boundaries.
constexpr int64_t kRowVector = 4;

/// Whether the 16-byte variant runs `loop`, once distributed over groups of
/// `lanes`, in runs of kRowVector iterations per lane: its static trip
/// count gives every lane a multiple of kRowVector iterations, few enough
/// to be unrolled (so the runs' loads and stores become 128-bit ones).
bool runsVectorRows(mlir::scf::ForOp loop, int64_t lanes);

/// What the warp rewriting needs from the kernel skeleton.
struct WarpContext {
  int64_t lanes = kWarpSize; // lanes per instance (the group)
  /// The 16-byte variant's distributed loops whose lanes run kRowVector
  /// consecutive iterations: lane l runs [4l, 4l + 4), then lanes * 4
  /// further on (the other loops: l, l + lanes, ...).
  llvm::SmallPtrSet<mlir::Operation *, 4> vectorLoops;
  mlir::Value lane;          // index in [0, lanes): the lane in its group
  mlir::Value lane0;         // i1: lane == 0
  mlir::Value mask;          // i32: the group's lanes in the warp
  /// Buffered destination -> its warp-private shared row (a 1-D workgroup
  /// memref) and this warp's offset in it.
  llvm::DenseMap<mlir::Value, std::pair<mlir::Value, mlir::Value>> buffers;
};

/// Rewrites the ops of an inlined body (`ops`: every op of the body before
/// inlining, nested ones included) for the warp mapping: distributes the
/// planned loops over lanes, reduces their carried values across the warp,
/// turns htmpl.accumulate into shared or global atomics, and issues the side
/// effects of warp-uniform code from lane 0.
void rewriteWarpBody(mlir::RewriterBase &rewriter, const TraversalPlan &plan,
                     llvm::ArrayRef<mlir::Operation *> ops,
                     const WarpContext &context);

/// Replaces each accumulate by a global atomic (thread mode).
void lowerAccumulatesToAtomics(mlir::RewriterBase &rewriter,
                               llvm::ArrayRef<htmpl::AccumulateOp> accs);

/// Thread mode: given each lane's destination row `row` (-1 when the lane
/// has no instance), the values of the reduced accumulations and their
/// other indices (`rest[k]`, the same on every lane), combines the values
/// of consecutive lanes with equal rows and issues one atomic per run. Must
/// be called where the whole warp is converged.
void emitSegmentedAccumulates(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value lane, mlir::Value row,
    llvm::ArrayRef<htmpl::AccumulateOp> accumulates, mlir::ValueRange values,
    llvm::ArrayRef<llvm::SmallVector<mlir::Value>> rest);

} // namespace hector::gpu

#endif // HECTOR_LIB_CONVERSION_HTMPLTOGPU_TRAVERSAL_H
