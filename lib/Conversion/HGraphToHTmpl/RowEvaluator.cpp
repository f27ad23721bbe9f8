//===- RowEvaluator.cpp - scalar code for hgraph row expressions -*- C++ -*-===//

#include "RowEvaluator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hector;
using namespace hector::lowering;
namespace hg = hector::hgraph;
using htmpl::AccessScheme;

namespace {
/// Ops evaluated row by row inside a consuming traversal.
bool isRowWise(Operation *op) {
  // zeros and add also make weights, which are not rows.
  if (isa<hg::ZerosOp, hg::AddOp>(op))
    return isa<hg::FeatureType>(op->getResult(0).getType());
  return isa<hg::DotOp, hg::ScaleOp, hg::ConstScaleOp, hg::AddOp, hg::SubOp,
             hg::MulOp, hg::DivOp, hg::ExpOp, hg::ReluOp, hg::TanhOp,
             hg::SigmoidOp, hg::NegOp, hg::LeakyReluOp, hg::SliceOp,
             hg::EqualOp, hg::LeakyReluGradOp>(op);
}

Value constantFloat(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}
} // namespace

std::optional<Leaf> RowEvaluator::leafOf(Value value) const {
  if (edgeDomain) {
    if (auto it = store.edges.find(value); it != store.edges.end())
      return it->second;
    if (value.getDefiningOp<hg::RelationNormOp>())
      return Leaf{store.edgeNorm, AccessScheme::Edge};
    if (auto gather = value.getDefiningOp<hg::GatherOp>()) {
      auto it = store.nodes.find(gather.getInput());
      if (it == store.nodes.end())
        return std::nullopt;
      return Leaf{it->second, gather.getFrom() == hg::Endpoint::Src
                                  ? AccessScheme::Src
                                  : AccessScheme::Dst};
    }
  } else if (auto it = store.nodes.find(value); it != store.nodes.end()) {
    return Leaf{it->second, AccessScheme::Node};
  }
  if (auto vector = value.getDefiningOp<hg::TypedVectorOp>()) {
    auto type = cast<hg::WeightType>(vector.getWeight().getType());
    AccessScheme scheme = type.getIndex() == hg::WeightIndex::Single
                              ? AccessScheme::Whole
                          : edgeDomain ? AccessScheme::EdgeType
                                       : AccessScheme::NodeType;
    Value weight = store.weights.lookup(vector.getWeight());
    if (!weight)
      return std::nullopt; // not in memory: reported by collect()
    return Leaf{weight, scheme};
  }
  return std::nullopt;
}

unsigned RowEvaluator::addLeaf(Leaf leaf) {
  auto it = llvm::find(leaves, leaf);
  if (it != leaves.end())
    return it - leaves.begin();
  leaves.push_back(leaf);
  return leaves.size() - 1;
}

unsigned RowEvaluator::leafIndex(Leaf leaf) const {
  auto it = llvm::find(leaves, leaf);
  assert(it != leaves.end() && "leaf was not collected");
  return it - leaves.begin();
}

Value RowEvaluator::collect(Value value) {
  if (std::optional<Leaf> leaf = leafOf(value)) {
    addLeaf(*leaf);
    return {};
  }
  if (auto it = store.softmaxes.find(value); it != store.softmaxes.end()) {
    addLeaf({it->second.score, AccessScheme::Edge});
    addLeaf({it->second.max, AccessScheme::Dst});
    addLeaf({it->second.sum, AccessScheme::Dst});
    return {};
  }
  if (auto gather = value.getDefiningOp<hg::GatherOp>())
    return gather.getInput(); // read on edges but not in memory
  if (value.getDefiningOp<hg::DegreeNormOp>()) {
    // The destination's CSR row bounds give its in-degree.
    addLeaf({store.csrRowPtr, AccessScheme::Dst});
    return {};
  }
  Operation *op = value.getDefiningOp();
  if (!op || !isRowWise(op))
    return value;
  for (Value operand : op->getOperands())
    if (Value missing = collect(operand))
      return missing;
  return {};
}

Value RowEvaluator::column(OpBuilder &b, hg::FeatureType type, Value head,
                           Value feature) {
  Location loc = head.getLoc();
  if (isPerHead(type))
    return type.getHeads() == 1 ? arith::ConstantIndexOp::create(b, loc, 0)
                                : head;
  if (type.getHeads() == 1)
    return feature;
  Value headWidth = arith::ConstantIndexOp::create(b, loc, type.getHeadWidth());
  Value start = arith::MulIOp::create(b, loc, head, headWidth);
  return arith::AddIOp::create(b, loc, start, feature);
}

Value RowEvaluator::load(OpBuilder &b, unsigned leaf, Value column) {
  Value memref = leaves[leaf].memref;
  Location loc = memref.getLoc();
  unsigned rank = cast<MemRefType>(memref.getType()).getRank();
  SmallVector<Value, 2> indices;
  if (leaves[leaf].scheme == AccessScheme::Whole)
    indices.push_back(column);
  else if (rank == 1)
    indices.push_back(rowArgs[leaf]);
  else
    indices.append({rowArgs[leaf], column});
  return memref::LoadOp::create(b, loc, memref, indices);
}

void RowEvaluator::hoistPerHead(OpBuilder &b, Value value, Value head) {
  auto type = cast<hg::FeatureType>(value.getType());
  if (isPerHead(type)) {
    emit(b, value, head, Value());
    return;
  }
  if (leafOf(value) || store.softmaxes.count(value))
    return;
  if (Operation *op = value.getDefiningOp())
    for (Value operand : op->getOperands())
      if (isa<hg::FeatureType>(operand.getType()))
        hoistPerHead(b, operand, head);
}

Value RowEvaluator::emit(OpBuilder &b, Value value, Value head,
                         Value feature) {
  auto type = cast<hg::FeatureType>(value.getType());
  bool perHeadValue = isPerHead(type);
  if (perHeadValue) {
    if (Value cached = perHead.lookup(value))
      return cached;
    // A single column serves every head: evaluate its inputs at head 0.
    if (type.getHeads() == 1)
      head = arith::ConstantIndexOp::create(b, head.getLoc(), 0);
  }
  Value result;
  if (std::optional<Leaf> leaf = leafOf(value)) {
    result = load(b, leafIndex(*leaf), column(b, type, head, feature));
  } else if (auto it = store.softmaxes.find(value);
             it != store.softmaxes.end()) {
    Value col = column(b, type, head, feature);
    Location loc = value.getLoc();
    Value score = load(b, leafIndex({it->second.score, AccessScheme::Edge}), col);
    Value max = load(b, leafIndex({it->second.max, AccessScheme::Dst}), col);
    Value sum = load(b, leafIndex({it->second.sum, AccessScheme::Dst}), col);
    Value shifted = arith::SubFOp::create(b, loc, score, max);
    Value exp = math::ExpOp::create(b, loc, shifted);
    result = arith::DivFOp::create(b, loc, exp, sum);
  } else {
    result = emitOp(b, value.getDefiningOp(), head, feature);
  }
  if (perHeadValue)
    perHead[value] = result;
  return result;
}

Value RowEvaluator::emitOp(OpBuilder &b, Operation *op, Value head,
                           Value feature) {
  Location loc = op->getLoc();
  Type element = cast<hg::FeatureType>(op->getResult(0).getType())
                     .getElementType();
  auto operand = [&](unsigned index) {
    return emit(b, op->getOperand(index), head, feature);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](hg::DotOp dot) -> Value {
        // Per-head inner product: a reduction loop over the head's features.
        // Per-head inputs of the operands are hoisted out of that loop.
        hoistPerHead(b, dot.getLhs(), head);
        hoistPerHead(b, dot.getRhs(), head);
        auto inType = cast<hg::FeatureType>(dot.getLhs().getType());
        Value zero = constantFloat(b, loc, element, 0.0);
        Value lower = arith::ConstantIndexOp::create(b, loc, 0);
        Value upper =
            arith::ConstantIndexOp::create(b, loc, inType.getHeadWidth());
        Value step = arith::ConstantIndexOp::create(b, loc, 1);
        auto loop = scf::ForOp::create(
            b, loc, lower, upper, step, ValueRange{zero},
            [&](OpBuilder &nested, Location nestedLoc, Value j,
                ValueRange acc) {
              Value lhs = emit(nested, dot.getLhs(), head, j);
              Value rhs = emit(nested, dot.getRhs(), head, j);
              Value product = arith::MulFOp::create(nested, nestedLoc, lhs, rhs);
              Value sum = arith::AddFOp::create(nested, nestedLoc, acc[0], product);
              scf::YieldOp::create(nested, nestedLoc, sum);
            });
        return loop.getResult(0);
      })
      .Case([&](hg::ScaleOp scale) -> Value {
        Value factor = emit(b, scale.getScale(), head, Value());
        return arith::MulFOp::create(b, loc, factor, operand(1));
      })
      .Case([&](hg::ConstScaleOp scale) -> Value {
        Value factor = constantFloat(b, loc, element,
                                     scale.getFactor().convertToDouble());
        return arith::MulFOp::create(b, loc, operand(0), factor);
      })
      .Case([&](hg::AddOp) -> Value {
        return arith::AddFOp::create(b, loc, operand(0), operand(1));
      })
      .Case([&](hg::SubOp) -> Value {
        return arith::SubFOp::create(b, loc, operand(0), operand(1));
      })
      .Case([&](hg::MulOp) -> Value {
        return arith::MulFOp::create(b, loc, operand(0), operand(1));
      })
      .Case([&](hg::DivOp) -> Value {
        return arith::DivFOp::create(b, loc, operand(0), operand(1));
      })
      .Case([&](hg::ExpOp) -> Value {
        return math::ExpOp::create(b, loc, operand(0));
      })
      .Case([&](hg::TanhOp) -> Value {
        return math::TanhOp::create(b, loc, operand(0));
      })
      .Case([&](hg::NegOp) -> Value {
        return arith::NegFOp::create(b, loc, operand(0));
      })
      .Case([&](hg::ReluOp) -> Value {
        return arith::MaximumFOp::create(b, loc, operand(0),
                                         constantFloat(b, loc, element, 0.0));
      })
      .Case([&](hg::SigmoidOp) -> Value {
        Value one = constantFloat(b, loc, element, 1.0);
        Value negated = arith::NegFOp::create(b, loc, operand(0));
        Value exp = math::ExpOp::create(b, loc, negated);
        Value denominator = arith::AddFOp::create(b, loc, one, exp);
        return arith::DivFOp::create(b, loc, one, denominator);
      })
      .Case([&](hg::ZerosOp) -> Value {
        return constantFloat(b, loc, element, 0.0);
      })
      .Case([&](hg::DegreeNormOp) -> Value {
        // 1 / (row_ptr[t + 1] - row_ptr[t]); an edge's destination has at
        // least that edge, so the degree is never 0.
        Value rowPtr = store.csrRowPtr;
        Value dst = rowArgs[leafIndex({rowPtr, AccessScheme::Dst})];
        Value next = arith::AddIOp::create(
            b, loc, dst, arith::ConstantIndexOp::create(b, loc, 1));
        Value begin = memref::LoadOp::create(b, loc, rowPtr, ValueRange{dst});
        Value end = memref::LoadOp::create(b, loc, rowPtr, ValueRange{next});
        Value degree = arith::SubIOp::create(b, loc, end, begin);
        Value count = arith::SIToFPOp::create(b, loc, element, degree);
        return arith::DivFOp::create(b, loc,
                                     constantFloat(b, loc, element, 1.0), count);
      })
      .Case([&](hg::SliceOp slice) -> Value {
        // Column `offset + feature` of the input's head block.
        auto inType = cast<hg::FeatureType>(slice.getInput().getType());
        if (isPerHead(inType))
          return emit(b, slice.getInput(), head, Value());
        Value offset =
            arith::ConstantIndexOp::create(b, loc, slice.getOffset());
        Value column =
            feature ? arith::AddIOp::create(b, loc, offset, feature) : offset;
        return emit(b, slice.getInput(), head, column);
      })
      .Case([&](hg::EqualOp) -> Value {
        Value same = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           operand(0), operand(1));
        return arith::SelectOp::create(b, loc, same,
                                       constantFloat(b, loc, element, 1.0),
                                       constantFloat(b, loc, element, 0.0));
      })
      .Case([&](hg::LeakyReluGradOp relu) -> Value {
        // grad where input > 0, else alpha * grad (like leaky_relu at 0).
        Value grad = operand(0), x = operand(1);
        Value zero = constantFloat(b, loc, element, 0.0);
        Value alpha = constantFloat(b, loc, element,
                                    relu.getAlpha().convertToDouble());
        Value positive =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
        Value scaled = arith::MulFOp::create(b, loc, alpha, grad);
        return arith::SelectOp::create(b, loc, positive, grad, scaled);
      })
      .Case([&](hg::LeakyReluOp relu) -> Value {
        Value x = operand(0);
        Value zero = constantFloat(b, loc, element, 0.0);
        Value alpha = constantFloat(b, loc, element,
                                    relu.getAlpha().convertToDouble());
        Value positive =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
        Value scaled = arith::MulFOp::create(b, loc, alpha, x);
        return arith::SelectOp::create(b, loc, positive, x, scaled);
      })
      .Default([](Operation *) -> Value {
        llvm_unreachable("collect() admits only row-wise ops");
      });
}
