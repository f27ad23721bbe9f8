//===- HGraph.h - Hector inter-operator dialect -----------------*- C++ -*-===//
//
// Entry header of the hgraph dialect: dialect, enums, attributes, types,
// interfaces and ops.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPH_H
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "hector/Dialect/HGraph/IR/HGraphDialect.h.inc"
#include "hector/Dialect/HGraph/IR/HGraphEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "hector/Dialect/HGraph/IR/HGraphAttrs.h.inc"

#include "hector/Dialect/HGraph/IR/HGraphTypeInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "hector/Dialect/HGraph/IR/HGraphTypes.h.inc"

namespace hector::hgraph::OpTrait {
/// Marks row-wise ops (HGraph_RowWise in HGraphDialect.td).
template <typename ConcreteType>
class RowWise : public mlir::OpTrait::TraitBase<ConcreteType, RowWise> {};
} // namespace hector::hgraph::OpTrait

namespace hector::hgraph {
class PullbackBuilder; // PullbackBuilder.h: the VJPOpInterface's hooks
} // namespace hector::hgraph

#include "hector/Dialect/HGraph/IR/HGraphOpInterfaces.h.inc"

#define GET_OP_CLASSES
#include "hector/Dialect/HGraph/IR/HGraphOps.h.inc"

namespace hector::hgraph {

/// True when every row of the edge-wise `value` is a function of the edge's
/// source node and edge type only, so that it may be stored once per unique
/// (source, edge type) pair (compact materialization).
bool dependsOnlySourceAndEdgeType(mlir::Value value);

/// True when the lowering (hgraph-to-htmpl) writes `value` to memory
/// whatever reads it: the results of GEMMs and reductions (typed_linear,
/// unless scattered into sources, aggregate, type_sum, weight_grad,
/// weight_outer, weight_product), edge_softmax, concat and zeros, and the
/// scores an edge_softmax normalises (stored before its per-destination
/// reductions). Other values are row-wise: their readers evaluate them, or
/// store them when they read rows in memory (LoweringStorage.h).
bool isStoredByLowering(mlir::Value value);

/// True for an op (not null) marked `hgraph.materialization = compact`: its
/// result has one row per unique (source, edge type) pair.
bool isMarkedCompact(mlir::Operation *op);

} // namespace hector::hgraph

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPH_H
