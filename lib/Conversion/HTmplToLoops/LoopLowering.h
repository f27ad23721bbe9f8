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

/// Rewrites one htmpl.gemm into loops before it and erases it.
void lowerGemm(mlir::RewriterBase &rewriter, htmpl::GemmOp op);

/// Emits a diagnostic and fails when a traversal cannot be lowered; called
/// on every traversal before any IR changes.
mlir::LogicalResult checkTraversal(htmpl::TraversalOp op);

/// Rewrites one htmpl.traversal (already checked) into loops before it and
/// erases it. Nested traversals must be lowered first.
void lowerTraversal(mlir::RewriterBase &rewriter, htmpl::TraversalOp op);

} // namespace hector::loops

#endif // HECTOR_LIB_CONVERSION_HTMPLTOLOOPS_LOOPLOWERING_H
