//===- MapParallelLoops.cpp - flat scf.parallel onto a GPU grid -*- C++ -*-===//
//
// htmpl-to-loops shapes its loop nests for the GPU itself: an outer
// scf.parallel over blocks with a nested one over the threads of a block,
// which upstream's gpu-map-parallel-loops maps as is (outer on blocks, nested
// on threads, deeper ones sequential). A *flat* parallel loop (no parallel
// loop inside), though, would get one thread per block from it, and a y grid
// bounded by 65535. This pass gives every outermost flat loop of host code a
// 1-D grid of fixed-size blocks instead:
//
//   scf.parallel (%i, %j) = (lb0, lb1) to (ub0, ub1) step (s0, s1) { body }
// =>
//   n0 = max(0, ceildiv(ub0 - lb0, s0)), n1 = ..., total = n0 * n1
//   scf.parallel (%b) = (0) to (ceildiv(total, B)) step (1) {      // blocks
//     scf.parallel (%t) = (0) to (B) step (1) {                     // threads
//       %l = %b * B + %t
//       scf.if %l < total {
//         %i = lb0 + (%l / n1) * s0 ; %j = lb1 + (%l mod n1) * s1
//         body
//       } } }
//
// The last dimension varies fastest along the threads, so a warp reads
// consecutive features of a row: coalesced. Nests are left to
// gpu-map-parallel-loops, which runs next.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace hector {
#define GEN_PASS_DEF_MAPPARALLELLOOPS
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

/// The attribute a loop may carry to choose its own threads per block.
constexpr llvm::StringLiteral kBlockSizeAttr = "hector.block_size";
/// Largest block CUDA allows.
constexpr int64_t kMaxBlockSize = 1024;

gpu::ParallelLoopDimMappingAttr mappingTo(MLIRContext *ctx,
                                          gpu::Processor processor) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, id, id);
}

class MapParallelLoopsPass
    : public hector::impl::MapParallelLoopsBase<MapParallelLoopsPass> {
public:
  using MapParallelLoopsBase::MapParallelLoopsBase;

  void runOnOperation() override {
    if (blockSize < 1 || blockSize > kMaxBlockSize) {
      getOperation().emitError("hector-map-parallel-loops: block size ")
          << blockSize.getValue() << " is outside [1, " << kMaxBlockSize
          << "]";
      return signalPassFailure();
    }
    // Outermost flat loops of host code; nests and loops already mapped
    // are gpu-map-parallel-loops' business, existing kernels nobody's.
    SmallVector<scf::ParallelOp> roots;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>() ||
          loop->getParentOfType<gpu::LaunchOp>() ||
          loop->getParentOfType<gpu::GPUModuleOp>() ||
          loop->hasAttr(gpu::getMappingAttrName()))
        return;
      bool nested = false;
      loop.getBody()->walk([&](scf::ParallelOp) { nested = true; });
      if (!nested)
        roots.push_back(loop);
    });
    for (scf::ParallelOp root : roots)
      if (failed(mapRoot(root)))
        return signalPassFailure();
  }

private:
  LogicalResult mapRoot(scf::ParallelOp root);
};

LogicalResult MapParallelLoopsPass::mapRoot(scf::ParallelOp root) {
  if (root.getNumResults() != 0)
    return root.emitError("a parallel loop with reductions cannot be mapped to "
                          "GPU threads; reduce through memref.atomic_rmw "
                          "(htmpl.accumulate) instead");
  int64_t threads = blockSize;
  if (auto attr = root->getAttrOfType<IntegerAttr>(kBlockSizeAttr)) {
    threads = attr.getInt();
    if (threads < 1 || threads > kMaxBlockSize)
      return root.emitError("'")
             << kBlockSizeAttr << "' must be in [1, " << kMaxBlockSize
             << "], got " << threads;
  }

  SmallVector<Value> lbs(root.getLowerBound()), ubs(root.getUpperBound()),
      steps(root.getStep()), ivs;

  IRRewriter rewriter(root.getContext());
  rewriter.setInsertionPoint(root);
  Location loc = root.getLoc();
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value zero = cst(0), one = cst(1), block = cst(threads);

  // Trip count of every dimension (steps are positive: scf.parallel's
  // verifier rejects others) and of the whole space.
  SmallVector<Value> counts;
  Value total = one;
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps)) {
    Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
    Value n = arith::CeilDivSIOp::create(rewriter, loc, span, step);
    n = arith::MaxSIOp::create(rewriter, loc, n, zero);
    counts.push_back(n);
    total = arith::MulIOp::create(rewriter, loc, total, n);
  }
  Value blocks = arith::CeilDivSIOp::create(rewriter, loc, total, block);

  auto grid = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                      ValueRange{blocks}, ValueRange{one});
  rewriter.setInsertionPointToStart(grid.getBody());
  auto lanes = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                       ValueRange{block}, ValueRange{one});
  rewriter.setInsertionPointToStart(lanes.getBody());
  Value linear = arith::MulIOp::create(rewriter, loc,
                                       grid.getInductionVars()[0], block);
  linear = arith::AddIOp::create(rewriter, loc, linear,
                                 lanes.getInductionVars()[0]);
  Value inRange = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::slt, linear, total);
  auto guard = scf::IfOp::create(rewriter, loc, inRange,
                                 /*withElseRegion=*/false);
  rewriter.setInsertionPointToStart(guard.thenBlock());

  // Delinearize, last dimension fastest.
  ivs.resize(counts.size());
  Value rest = linear;
  for (size_t k = counts.size(); k-- > 0;) {
    Value idx = rest;
    if (k != 0) {
      idx = arith::RemSIOp::create(rewriter, loc, rest, counts[k]);
      rest = arith::DivSIOp::create(rewriter, loc, rest, counts[k]);
    }
    Value offset = arith::MulIOp::create(rewriter, loc, idx, steps[k]);
    ivs[k] = arith::AddIOp::create(rewriter, loc, lbs[k], offset);
  }

  // The body moves into the guard; its scf.reduce goes away.
  Block *body = root.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, guard.thenBlock()->getTerminator(), ivs);
  rewriter.eraseOp(root);

  MLIRContext *ctx = grid.getContext();
  if (failed(gpu::setMappingAttr(
          grid, {mappingTo(ctx, gpu::Processor::BlockX)})) ||
      failed(gpu::setMappingAttr(
          lanes, {mappingTo(ctx, gpu::Processor::ThreadX)})))
    return grid.emitError("could not attach the GPU mapping");
  return success();
}

} // namespace

