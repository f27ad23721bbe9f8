//===- LoweringStorage.cpp - the memory hgraph-to-htmpl allocates ---------===//

#include "hector/Dialect/HGraph/IR/LoweringStorage.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

using namespace mlir;
using namespace hector::hgraph;

namespace {
/// True for a typed_linear scattered into sources whose GEMM runs over the
/// per-pair sums of its input.
bool isScatteredOverPairs(TypedLinearOp linear, bool pairsPay) {
  if (!pairsPay || !linear->hasOneUse())
    return false;
  auto aggregate = dyn_cast<AggregateOp>(*linear->getUsers().begin());
  return aggregate && scatteredLinear(aggregate) == linear;
}

bool isWeightSumTerm(Operation *op) {
  if (op->getNumResults() != 1 ||
      !isa<WeightType>(op->getResult(0).getType()) || !op->hasOneUse())
    return false;
  auto user = dyn_cast<AddOp>(*op->getUsers().begin());
  return user && isa<WeightType>(user.getType());
}
} // namespace

bool hector::hgraph::pairsPay(FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto mark = func.getArgAttrOfType<MaterializationAttr>(
            i, HGraphDialect::getMaterializationAttrName());
        mark && mark.getValue() == Materialization::Compact)
      return true;
  return llvm::any_of(func.getBody().front(),
                      [](Operation &op) { return isMarkedCompact(&op); });
}

bool hector::hgraph::isStoredPerNode(TypedLinearOp op) {
  return op.getFrom() != Endpoint::Edge && op.getFrom() != Endpoint::Node &&
         cast<WeightType>(op.getWeight().getType()).getIndex() !=
             WeightIndex::EdgeType;
}

TypedLinearOp hector::hgraph::scatteredLinear(AggregateOp op) {
  auto linear = op.getInput().getDefiningOp<TypedLinearOp>();
  if (op.getReceiver() != Endpoint::Src || !linear ||
      linear.getFrom() != Endpoint::Edge || !linear->hasOneUse() ||
      isMarkedCompact(linear))
    return {};
  return linear;
}

ScaleOp hector::hgraph::typeSumOverPairs(TypeSumOp op,
                                         CompactRowsQuery hasCompactRows) {
  auto weightType = cast<WeightType>(op.getType());
  auto scale = op.getInput().getDefiningOp<ScaleOp>();
  if (!scale || weightType.getIndex() != WeightIndex::EdgeType ||
      !hasCompactRows(scale.getInput()))
    return {};
  auto scaleType = cast<FeatureType>(scale.getScale().getType());
  return scaleType.isEdgeWise() ? scale : ScaleOp();
}

bool hector::hgraph::sumsGradPerPair(WeightGradOp op) {
  return op.getFrom() == Endpoint::Src && isMarkedCompact(op);
}

SmallVector<Operation *, 2>
hector::hgraph::pairSumReaders(Value edgeValue, bool pairsPay,
                               CompactRowsQuery hasCompactRows) {
  SmallVector<Operation *, 2> readers;
  for (Operation *user : edgeValue.getUsers()) {
    if (auto scale = dyn_cast<ScaleOp>(user);
        scale && scale.getScale() == edgeValue)
      for (Operation *sum : scale->getUsers())
        if (auto typeSum = dyn_cast<TypeSumOp>(sum);
            typeSum && typeSumOverPairs(typeSum, hasCompactRows) == scale)
          readers.push_back(typeSum);
    if (auto grad = dyn_cast<WeightGradOp>(user)) {
      if (grad.getGrad() == edgeValue && sumsGradPerPair(grad))
        readers.push_back(grad);
    } else if (auto linear = dyn_cast<TypedLinearOp>(user);
               linear && isScatteredOverPairs(linear, pairsPay)) {
      readers.push_back(*linear->getUsers().begin());
    }
  }
  return readers;
}

bool hector::hgraph::readsPairSumsOnly(OpOperand &use, bool pairsPay,
                                       CompactRowsQuery hasCompactRows) {
  Operation *user = use.getOwner();
  if (auto grad = dyn_cast<WeightGradOp>(user))
    return use.get() == grad.getGrad() && sumsGradPerPair(grad);
  if (auto linear = dyn_cast<TypedLinearOp>(user))
    return use.get() == linear.getInput() &&
           isScatteredOverPairs(linear, pairsPay);
  if (auto scale = dyn_cast<ScaleOp>(user))
    return use.get() == scale.getScale() && !scale->use_empty() &&
           llvm::all_of(scale->getUsers(), [&](Operation *sum) {
             auto typeSum = dyn_cast<TypeSumOp>(sum);
             return typeSum &&
                    typeSumOverPairs(typeSum, hasCompactRows) == scale;
           });
  return false;
}

bool hector::hgraph::readsRowsInMemory(OpOperand &use, bool pairsPay) {
  Operation *user = use.getOwner();
  if (isa<GatherOp>(user))
    return true;
  if (auto linear = dyn_cast<TypedLinearOp>(user))
    return use.get() == linear.getInput() &&
           !isScatteredOverPairs(linear, pairsPay);
  if (auto grad = dyn_cast<WeightGradOp>(user))
    return use.get() == grad.getInput() || !sumsGradPerPair(grad);
  return false;
}

bool hector::hgraph::isRowWise(Operation *op) {
  // zeros and add also make weights, which are not rows.
  return op->hasTrait<OpTrait::RowWise>() &&
         isa<FeatureType>(op->getResult(0).getType());
}

namespace {
/// Whether `value`, evaluated by the row-wise ops `ops`, is a per-edge
/// scalar whose evaluation loads at least kMinLoadsOfSharedScalar values
/// (the operands of `ops` that none of them defines).
bool isCostlySharedScalar(Value value,
                          const llvm::SmallPtrSetImpl<Operation *> &ops) {
  auto type = cast<FeatureType>(value.getType());
  if (!type.isEdgeWise() || type.getHeadWidth() != 1)
    return false;
  llvm::SmallPtrSet<Value, 8> loads;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (!ops.contains(operand.getDefiningOp()))
        loads.insert(operand);
  return static_cast<int64_t>(loads.size()) >= kMinLoadsOfSharedScalar;
}
} // namespace

llvm::DenseSet<Value> hector::hgraph::rowsStoredByFusion(FuncOp func) {
  using OpSet = llvm::SmallPtrSet<Operation *, 8>;
  llvm::DenseSet<Value> stored;
  DenseMap<Value, OpSet> fused; // row-wise values that are fused
  for (Operation &op : func.getBody().front()) {
    if (op.getNumResults() != 1 || !isRowWise(&op))
      continue;
    SmallVector<Value, 2> operands;
    for (Value operand : op.getOperands())
      if (fused.count(operand) && !llvm::is_contained(operands, operand))
        operands.push_back(operand);
    OpSet ops;
    while (true) {
      ops.clear();
      ops.insert(&op);
      for (Value operand : operands)
        for (Operation *inner : fused[operand])
          if (static_cast<int64_t>(ops.size()) <= kMaxFusedOps)
            ops.insert(inner);
      if (static_cast<int64_t>(ops.size()) <= kMaxFusedOps)
        break;
      auto largest = llvm::max_element(operands, [&](Value a, Value b) {
        return fused[a].size() < fused[b].size();
      });
      stored.insert(*largest);
      fused.erase(*largest);
      operands.erase(largest);
    }
    Value result = op.getResult(0);
    if (!result.hasOneUse() &&
        (static_cast<int64_t>(ops.size()) > kMaxSharedOps ||
         isCostlySharedScalar(result, ops)))
      stored.insert(result);
    else
      fused[result] = std::move(ops);
  }
  return stored;
}

bool hector::hgraph::isSharedScore(Value value,
                                   function_ref<bool(Value)> inMemory) {
  Operation *op = value.getDefiningOp();
  if (!op || op->getNumResults() != 1 || value.hasOneUse() ||
      value.use_empty())
    return false;
  auto type = dyn_cast<FeatureType>(value.getType());
  if (!type || !type.isEdgeWise() || type.getWidth() != type.getHeads())
    return false;
  // A dot product over wider rows among the row-wise ops it is made of.
  SmallVector<Operation *> work{op};
  llvm::SmallPtrSet<Operation *, 16> seen{op};
  while (!work.empty()) {
    Operation *current = work.pop_back_val();
    if (auto dot = dyn_cast<DotOp>(current))
      if (cast<FeatureType>(dot.getLhs().getType()).getWidth() >
          type.getWidth())
        return true;
    if (!isa<DotOp, ScaleOp, ConstScaleOp, AddOp, SubOp, MulOp, DivOp, ExpOp,
             ReluOp, TanhOp, SigmoidOp, NegOp, GeluOp, GeluGradOp, LeakyReluOp,
             LeakyReluGradOp>(current))
      continue;
    for (Value operand : current->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        if (!inMemory(operand) && seen.insert(producer).second)
          work.push_back(producer);
  }
  return false;
}

FeatureType hector::hgraph::softmaxNodeScratch(EdgeSoftmaxOp op) {
  auto type = cast<FeatureType>(op.getInput().getType());
  return cast<FeatureType>(NodeValueType::get(
      type.getWidth(), type.getElementType(), type.getHeads()));
}

bool hector::hgraph::isWrittenIntoSum(Operation *op) {
  return isa<WeightGradOp, AddOp>(op) && isWeightSumTerm(op);
}

SmallVector<Value, 4> hector::hgraph::weightSumTerms(AddOp op) {
  SmallVector<Value, 4> terms;
  SmallVector<Value, 4> work{op.getRhs(), op.getLhs()};
  while (!work.empty()) {
    Value term = work.pop_back_val();
    auto nested = term.getDefiningOp<AddOp>();
    if (nested && isWrittenIntoSum(nested)) {
      work.append({nested.getRhs(), nested.getLhs()});
      continue;
    }
    if (!term.getDefiningOp<ZerosOp>())
      terms.push_back(term);
  }
  std::stable_partition(terms.begin(), terms.end(), [](Value term) {
    return isa_and_nonnull<WeightOuterOp>(term.getDefiningOp());
  });
  return terms;
}

AddOp hector::hgraph::sumWrittenInPlace(WeightOuterOp op) {
  if (!isWeightSumTerm(op))
    return {};
  auto sum = cast<AddOp>(*op->getUsers().begin());
  while (isWrittenIntoSum(sum))
    sum = cast<AddOp>(*sum->getUsers().begin());
  return weightSumTerms(sum).front() == op.getResult() ? sum : AddOp();
}
