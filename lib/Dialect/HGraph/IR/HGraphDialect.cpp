//===- HGraphDialect.cpp - hgraph dialect registration ----------*- C++ -*-===//

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hector::hgraph;

#include "hector/Dialect/HGraph/IR/HGraphDialect.cpp.inc"
#include "hector/Dialect/HGraph/IR/HGraphEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "hector/Dialect/HGraph/IR/HGraphAttrs.cpp.inc"

void HGraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "hector/Dialect/HGraph/IR/HGraphOps.cpp.inc"
      >();
  registerTypes();
  registerAttributes();
}

void HGraphDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "hector/Dialect/HGraph/IR/HGraphAttrs.cpp.inc"
      >();
}

LogicalResult HGraphDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() != getMaterializationAttrName())
    return op->emitError() << "unknown hgraph attribute '"
                           << attr.getName().getValue() << "'";
  auto materialization = dyn_cast<MaterializationAttr>(attr.getValue());
  if (!materialization)
    return op->emitError() << "'" << getMaterializationAttrName()
                           << "' must be a #hgraph.materialization attribute";
  if (op->getNumResults() != 1 ||
      !isa<EdgeValueType>(op->getResult(0).getType()))
    return op->emitError() << "'" << getMaterializationAttrName()
                           << "' applies only to an operation with one "
                              "edge-wise result";
  if (materialization.getValue() == Materialization::Compact &&
      !dependsOnlySourceAndEdgeType(op->getResult(0)))
    return op->emitError()
           << "compact materialization needs a value that depends only on "
              "the source node and the edge type";
  return success();
}

namespace hector::hgraph {

bool dependsOnlySourceAndEdgeType(Value value) {
  if (!isa<EdgeValueType>(value.getType()))
    return false;
  // Edge-wise function arguments are arbitrary per-edge data.
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  auto allOperandsQualify = [](Operation *op) {
    return llvm::all_of(op->getOperands(), dependsOnlySourceAndEdgeType);
  };
  return llvm::TypeSwitch<Operation *, bool>(def)
      .Case([](TypedLinearOp op) {
        switch (op.getFrom()) {
        case Endpoint::Src:
          return true;
        case Endpoint::Edge:
          return dependsOnlySourceAndEdgeType(op.getInput());
        default:
          return false;
        }
      })
      .Case([](GatherOp op) { return op.getFrom() == Endpoint::Src; })
      .Case([](TypedVectorOp) { return true; })
      .Case<DotOp, ScaleOp, ConstScaleOp, ConcatOp, AddOp, SubOp, MulOp, DivOp,
            ExpOp, ReluOp, TanhOp, SigmoidOp, NegOp, LeakyReluOp>(
          allOperandsQualify)
      .Default([](Operation *) { return false; });
}

} // namespace hector::hgraph
