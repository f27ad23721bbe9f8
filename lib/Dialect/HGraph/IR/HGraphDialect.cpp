//===- HGraphDialect.cpp - hgraph dialect registration ----------*- C++ -*-===//

#include "hector/Dialect/HGraph/IR/HGraph.h"
#include "hector/Dialect/HGraph/IR/LoweringStorage.h"
#include "hector/EntryABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hector::hgraph;
namespace abi = hector::abi;

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
  // The training ABI's function attributes (set by hgraph-autodiff).
  if (attr.getName() == "hgraph.kind" || attr.getName() == "hgraph.primal") {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<FuncOp>(op) || !text)
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a string on an hgraph.func";
    if (attr.getName() == "hgraph.kind" &&
        !abi::isEntryKind(text.getValue()))
      return op->emitError() << "'hgraph.kind' must be "
                             << abi::entryKindList() << ", got '"
                             << text.getValue() << "'";
    return success();
  }
  if (attr.getName() != getMaterializationAttrName())
    return op->emitError() << "unknown hgraph attribute '"
                           << attr.getName().getValue() << "'";
  auto materialization = dyn_cast<MaterializationAttr>(attr.getValue());
  if (!materialization)
    return op->emitError() << "'" << getMaterializationAttrName()
                           << "' must be a #hgraph.materialization attribute";
  // On a weight gradient, compact means: sum the gradient rows of each
  // (source, edge type) pair before the outer product.
  if (auto grad = dyn_cast<WeightGradOp>(op)) {
    auto weight = cast<WeightType>(grad.getType());
    if (materialization.getValue() == Materialization::Compact &&
        (grad.getFrom() != Endpoint::Src ||
         weight.getIndex() != WeightIndex::EdgeType))
      return op->emitError()
             << "compact materialization of a weight gradient needs 'from "
                "src' and an edge-typed weight";
    return success();
  }
  if (op->getNumResults() != 1 ||
      !isa<EdgeValueType>(op->getResult(0).getType()))
    return op->emitError() << "'" << getMaterializationAttrName()
                           << "' applies only to an operation with one "
                              "edge-wise result, or to a weight gradient";
  if (materialization.getValue() == Materialization::Compact &&
      !dependsOnlySourceAndEdgeType(op->getResult(0)))
    return op->emitError()
           << "compact materialization needs a value that depends only on "
              "the source node and the edge type";
  return success();
}

namespace hector::hgraph {

/// True when `arg` is an argument of an hgraph.func marked as holding one
/// row per unique (source, edge type) pair. Read defensively: this runs
/// while ops are verified, before the function's own invariants are.
static bool isCompactArgument(BlockArgument arg) {
  Block *block = arg.getOwner();
  auto func = dyn_cast_or_null<FuncOp>(block->getParentOp());
  if (!func || !block->isEntryBlock())
    return false;
  ArrayAttr all = func.getArgAttrsAttr();
  if (!all || arg.getArgNumber() >= all.size())
    return false;
  auto dict = dyn_cast<DictionaryAttr>(all[arg.getArgNumber()]);
  auto attr = dict ? dict.getAs<MaterializationAttr>(
                         HGraphDialect::getMaterializationAttrName())
                   : nullptr;
  return attr && attr.getValue() == Materialization::Compact;
}

bool isMarkedCompact(Operation *op) {
  auto mark = op ? op->getAttrOfType<MaterializationAttr>(
                       HGraphDialect::getMaterializationAttrName())
                 : MaterializationAttr();
  return mark && mark.getValue() == Materialization::Compact;
}

bool dependsOnlySourceAndEdgeType(Value root) {
  // A walk over the row expression, iterative and visiting each value once
  // (expressions are DAGs and may be long): every value reached must be
  // edge-wise and be computed from qualifying values only, down to reads at
  // the source or per edge type.
  SmallVector<Value> stack{root};
  llvm::DenseSet<Value> seen{root};
  auto visit = [&](Value operand) {
    if (seen.insert(operand).second)
      stack.push_back(operand);
  };
  while (!stack.empty()) {
    Value value = stack.pop_back_val();
    // Edge-wise function arguments are arbitrary per-edge data, unless the
    // function gives them one row per (source, edge type) pair.
    Operation *def = value.getDefiningOp();
    if (!isa<EdgeValueType>(value.getType()))
      return false;
    if (!def) {
      if (isCompactArgument(cast<BlockArgument>(value)))
        continue;
      return false;
    }
    // Another op marked compact is verified on its own (its mark is
    // wrong only if its own verification fails): no need to walk it again.
    if (value != root && isMarkedCompact(def))
      continue;
    // Dialect attributes are verified before the operation's own
    // invariants, so nothing here may assume a well-formed operation.
    bool qualifies =
        llvm::TypeSwitch<Operation *, bool>(def)
            .Case([&](TypedLinearOp op) {
              EndpointAttr from = op.getFromAttr();
              if (!from || op->getNumOperands() != 2)
                return false;
              if (from.getValue() == Endpoint::Edge)
                visit(op->getOperand(1));
              return from.getValue() == Endpoint::Src ||
                     from.getValue() == Endpoint::Edge;
            })
            .Case([](GatherOp op) {
              EndpointAttr from = op.getFromAttr();
              return from && from.getValue() == Endpoint::Src;
            })
            .Case<TypedVectorOp, ZerosOp>([](Operation *) { return true; })
            .Case<DotOp, ScaleOp, ConstScaleOp, ConcatOp, SliceOp, AddOp,
                  SubOp, MulOp, DivOp, EqualOp, ExpOp, ReluOp, TanhOp,
                  SigmoidOp, NegOp, GeluOp, GeluGradOp, LeakyReluOp,
                  LeakyReluGradOp>(
                [&](Operation *op) {
                  for (Value operand : op->getOperands())
                    visit(operand);
                  return true;
                })
            .Default([](Operation *) { return false; });
    if (!qualifies)
      return false;
  }
  return true;
}

bool isStoredByLowering(Value value) {
  Operation *def = value.getDefiningOp();
  // A typed_linear scattered into sources never reaches memory.
  if (auto linear = dyn_cast_or_null<TypedLinearOp>(def); linear &&
      linear->hasOneUse())
    if (auto aggregate = dyn_cast<AggregateOp>(*linear->getUsers().begin());
        aggregate && scatteredLinear(aggregate) == linear)
      return false;
  if (def &&
      isa<TypedLinearOp, AggregateOp, TypeSumOp, WeightGradOp, WeightOuterOp,
          WeightProductOp, EdgeSoftmaxOp, GroupSumOp, ConcatOp, ZerosOp>(def))
    return true;
  return llvm::any_of(value.getUsers(), [](Operation *user) {
    return isa<EdgeSoftmaxOp, GroupSumOp>(user);
  });
}

} // namespace hector::hgraph
