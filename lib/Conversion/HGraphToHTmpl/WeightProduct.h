//===- WeightProduct.h - lowering of hgraph.weight_product ------*- C++ -*-===//
//
// Part of the hgraph-to-htmpl lowering: `hgraph.weight_product` involves no
// graph rows, only one small matrix product per type, so it becomes one
// parallel loop over (type, result element) of its own.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_WEIGHTPRODUCT_H
#define HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_WEIGHTPRODUCT_H

#include "RowEvaluator.h"

namespace hector::lowering {

/// The graph arrays that say which node type an edge type's endpoints have
/// (read only for a product of a node-typed and an edge-typed weight).
struct EndpointTypeArrays {
  mlir::Value nodeType, edgeSrc, edgeDst, etypeOffsets;
};

/// Emits at `builder`'s insertion point the computation of `op` into a new
/// weight buffer, records it in `values.weights`, and appends the buffer to
/// `temporaries` (deallocated at the end of the entry point).
mlir::LogicalResult
lowerWeightProduct(mlir::OpBuilder &builder, hgraph::WeightProductOp op,
                   ValueStore &values, const EndpointTypeArrays &graph,
                   llvm::SmallVectorImpl<mlir::Value> &temporaries);

/// The same for `hgraph.weight_outer`: one parallel loop over (type, result
/// element), each a product of one element of each vector, into a new buffer
/// or into `destination` (the buffer of the sum of weights it starts).
mlir::LogicalResult
lowerWeightOuter(mlir::OpBuilder &builder, hgraph::WeightOuterOp op,
                 ValueStore &values,
                 llvm::SmallVectorImpl<mlir::Value> &temporaries,
                 mlir::Value destination = {});

} // namespace hector::lowering

#endif // HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_WEIGHTPRODUCT_H
