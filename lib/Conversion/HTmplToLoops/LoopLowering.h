//===- LoopLowering.h - htmpl-to-loops internals ----------------*- C++ -*-===//
//
// Shared by the GEMM and traversal lowerings of the htmpl-to-loops pass.
//
// One rule holds for all generated code: every memref.load sits inside the
// outermost scf.parallel. Loop bounds come only from memref.dim (descriptor
// metadata), never from loaded data, so that the GPU backend can launch the
// outermost loop from the host without reading device memory there.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HTMPLTOLOOPS_LOOPLOWERING_H
#define HECTOR_LIB_CONVERSION_HTMPLTOLOOPS_LOOPLOWERING_H

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace hector::loops {

using templates::bodyArguments;
using templates::constIndex;
using templates::dimOf;
using templates::inlineBody;
using templates::loadIndex;
using templates::searchOffsets;
using templates::weightIndices;

/// Opens the iteration space [0, upper) as ceil(upper / lanes) groups of
/// `lanes` iterations: an scf.parallel over groups, a nested scf.parallel
/// over lanes, and a guard against the last partial group. The two levels
/// are what the GPU backend maps onto blocks and threads (lanes is the
/// instance's launch_bounds); on the CPU they are one loop. Leaves the
/// insertion point inside the guard and returns the iteration index.
mlir::Value openParallel(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value upper, int64_t lanes);

/// Rewrites one htmpl.gemm into loops before it and erases it.
void lowerGemm(mlir::RewriterBase &rewriter, htmpl::GemmOp op);

/// Emits a diagnostic and fails when a traversal cannot be lowered; called
/// on every traversal before any IR changes.
mlir::LogicalResult checkTraversal(htmpl::TraversalOp op);

/// Rewrites one htmpl.traversal (already checked) into loops before it and
/// erases it. Nested traversals must be lowered first.
void lowerTraversal(mlir::RewriterBase &rewriter, htmpl::TraversalOp op);

/// Rewrites one htmpl.softmax_aggregate into loops before it and erases it.
void lowerSoftmaxAggregate(mlir::RewriterBase &rewriter,
                           htmpl::SoftmaxAggregateOp op);

} // namespace hector::loops

#endif // HECTOR_LIB_CONVERSION_HTMPLTOLOOPS_LOOPLOWERING_H
