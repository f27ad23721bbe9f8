//===- Autodiff.cpp - reverse-mode differentiation of hgraph.func -*- C++
//-*-===//
//
// For each primal `hgraph.func @f` this builds `@f_bwd` by walking the body in
// reverse and applying each op's vector-Jacobian rule, written with hgraph
// ops so that the backward goes through the same lowering (GEMM and traversal
// templates, fusion) as the forward. Every forward value the rules read is
// either an argument of `@f_bwd` (an argument of `@f`, or a value `@f_fwd`
// saved) or recomputed inside `@f_bwd`; the save policy decides which, and
// the decision is visible in the two functions' signatures.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hector {
#define GEN_PASS_DEF_HGRAPHAUTODIFF
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
namespace hg = hector::hgraph;

namespace {

enum class SavePolicy { Materialized, All, None };

// Attributes of the training ABI (docs/compilation.md).
constexpr StringLiteral kName = "hgraph.name";
constexpr StringLiteral kRole = "hgraph.role";
constexpr StringLiteral kKind = "hgraph.kind";
constexpr StringLiteral kPrimal = "hgraph.primal";

std::string resultName(hg::FuncOp func, unsigned index) {
  if (auto name = func.getResultAttrOfType<StringAttr>(index, kName))
    return name.str();
  return ("result" + Twine(index)).str();
}

/// Ops that are cheaper to redo than to read back: graph constants and
/// weight reads.
bool isFree(Operation *op) {
  return isa<hg::RelationNormOp, hg::DegreeNormOp, hg::TypedVectorOp,
             hg::ZerosOp, hg::WeightProductOp>(op);
}

/// Values the forward lowering writes to memory anyway, which the default
/// policy saves rather than recomputes.
bool isMaterialized(Value value) { return hg::isStoredByLowering(value); }

/// Rows at least this wide make a per-edge dot product worth saving.
constexpr int64_t kMinSavedDotWidth = 8;

/// A per-edge dot product of rows, which the default policy saves too:
/// recomputing it reads two rows per edge again (HGT's k·q for the
/// gradient of its per-type μ: 2.8 ms of a 31 ms training step on the mag
/// shape, H200), saving it one value per edge and head. The forward stores
/// it once, beside the score it feeds.
bool isCostlyToRecompute(Operation *op) {
  auto dot = dyn_cast<hg::DotOp>(op);
  if (!dot)
    return false;
  auto type = cast<hg::FeatureType>(dot.getResult().getType());
  auto rows = cast<hg::FeatureType>(dot.getLhs().getType());
  return type.isEdgeWise() && rows.getHeadWidth() >= kMinSavedDotWidth;
}

/// Ops whose result does not vary with their operands (zero derivative).
bool isPiecewiseConstant(Operation *op) { return isa<hg::EqualOp>(op); }

/// The `hgraph.materialization` entry of an argument or result attribute
/// dictionary, which the training functions keep: an edge-wise value given
/// or returned one row per (source, edge type) pair stays so in @f_fwd and
/// @f_bwd, as in @f.
std::optional<NamedAttribute> materializationOf(DictionaryAttr dict) {
  if (!dict)
    return std::nullopt;
  return dict.getNamed(hg::HGraphDialect::getMaterializationAttrName());
}

bool isCompact(DictionaryAttr dict) {
  std::optional<NamedAttribute> entry = materializationOf(dict);
  auto attr = entry ? dyn_cast<hg::MaterializationAttr>(entry->getValue())
                    : nullptr;
  return attr && attr.getValue() == hg::Materialization::Compact;
}

//===----------------------------------------------------------------------===//
// Differentiator: one primal function.
//===----------------------------------------------------------------------===//

class Differentiator {
public:
  Differentiator(hg::FuncOp primal, SavePolicy policy,
                 const llvm::StringSet<> &wrt)
      : primal(primal), policy(policy), wrt(wrt), builder(primal.getContext()) {
  }

  LogicalResult run();

private:
  LogicalResult findActiveValues();
  LogicalResult checkCompactValues();
  bool isActive(Value value) const { return active.contains(value); }

  // The backward function under construction.
  Value forward(Value primalValue);
  void recompute(Operation *op);
  BlockArgument newArgument(Type type, Location loc);
  void addCotangent(Value primalValue, Value contribution);
  LogicalResult pullback(Operation *op);
  void finishBackward();
  void buildForward();

  // Vector-Jacobian rules that need more than a line.
  LogicalResult pullbackTypedLinear(hg::TypedLinearOp op, Value dy);
  void pullbackAggregate(hg::AggregateOp op, Value dy);
  void pullbackEdgeSoftmax(hg::EdgeSoftmaxOp op, Value dy);

  // Builders for the rules, at the end of the backward body.
  template <typename OpTy, typename... Args>
  Value make(Type type, Args &&...args) {
    return OpTy::create(builder, loc, type, std::forward<Args>(args)...)
        .getResult();
  }
  Value add(Value a, Value b) { return make<hg::AddOp>(a.getType(), a, b); }
  Value mul(Value a, Value b) { return make<hg::MulOp>(a.getType(), a, b); }
  Value gather(Value node, Type edgeType, hg::Endpoint at) {
    return make<hg::GatherOp>(edgeType, node, at);
  }
  Value aggregateSum(Value edge, Type nodeType, hg::Endpoint into);
  Value graph() { return body->getArgument(0); }

  hg::FuncOp primal;
  SavePolicy policy;
  const llvm::StringSet<> &wrt;
  OpBuilder builder;
  Location loc = primal.getLoc();

  llvm::DenseSet<Value> active;
  Block *body = nullptr;
  /// Primal value -> its value in the backward body (argument, saved or
  /// recomputed).
  IRMapping inBackward;
  /// Primal value -> the sum of its gradient contributions so far.
  DenseMap<Value, Value> cotangents;

  // Arguments of the backward function, in creation order.
  DenseMap<unsigned, BlockArgument> primalArguments; // by primal index
  SmallVector<Value> savedValues;                    // primal values
  SmallVector<BlockArgument> savedArguments;
  SmallVector<BlockArgument> resultGradients;
};

LogicalResult Differentiator::findActiveValues() {
  Block &entry = primal.getBody().front();
  // Forward: values that vary with a differentiated argument.
  llvm::DenseSet<Value> varied;
  for (BlockArgument arg : entry.getArguments())
    if (!isa<hg::GraphType>(arg.getType()) &&
        wrt.contains(primal.getArgumentName(arg.getArgNumber())))
      varied.insert(arg);
  for (Operation &op : entry) {
    if (isPiecewiseConstant(&op))
      continue;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      varied.insert(op.result_begin(), op.result_end());
  }
  // Backward: values a result depends on.
  llvm::DenseSet<Value> useful;
  for (Value result : entry.getTerminator()->getOperands())
    useful.insert(result);
  for (Operation &op : llvm::reverse(entry))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return useful.contains(v); }))
      useful.insert(op.operand_begin(), op.operand_end());
  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
  return success();
}

/// A compact argument's gradient would be a sum over the edges of each pair,
/// and a compact result's cotangent must count once per pair, not once per
/// edge: neither is built yet, so both are reported rather than differentiated
/// per edge (a gradient of another shape than its argument).
LogicalResult Differentiator::checkCompactValues() {
  Block &entry = primal.getBody().front();
  for (BlockArgument arg : entry.getArguments())
    if (isActive(arg) && isCompact(primal.getArgAttrDict(arg.getArgNumber())))
      return mlir::emitError(arg.getLoc())
             << "hgraph-autodiff: argument '"
             << primal.getArgumentName(arg.getArgNumber())
             << "' has compact materialization (one row per unique (source, "
                "edge type) pair); its gradient is not supported yet: pass it "
                "one row per edge, or leave it out of 'wrt'";
  for (auto [index, result] :
       llvm::enumerate(entry.getTerminator()->getOperands()))
    if (isActive(result) && isCompact(primal.getResultAttrDict(index)))
      return primal.emitError("hgraph-autodiff: result #")
             << index
             << " has compact materialization (one row per unique (source, "
                "edge type) pair) and depends on a differentiated argument; "
                "differentiating through a compact result is not supported "
                "yet: return it one row per edge";
  return success();
}

BlockArgument Differentiator::newArgument(Type type, Location argLoc) {
  return body->addArgument(type, argLoc);
}

/// The value of a forward value inside the backward body: an argument, a
/// saved value, or a recomputation, following the save policy. A
/// recomputation needs its operands' values first: they are found with an
/// explicit stack (a long chain of recomputed row-wise ops must not recurse
/// once per op), and each forward value is mapped once.
Value Differentiator::forward(Value value) {
  // (value, whether its operands were asked for already)
  SmallVector<std::pair<Value, bool>> stack{{value, false}};
  while (!stack.empty()) {
    auto [next, expanded] = stack.back();
    if (inBackward.contains(next)) {
      stack.pop_back();
      continue;
    }
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      BlockArgument mapped = newArgument(arg.getType(), arg.getLoc());
      primalArguments[arg.getArgNumber()] = mapped;
      inBackward.map(next, mapped);
      stack.pop_back();
      continue;
    }
    Operation *op = next.getDefiningOp();
    bool save = !isFree(op) &&
                (policy == SavePolicy::All ||
                 (policy == SavePolicy::Materialized &&
                  (isMaterialized(next) || isCostlyToRecompute(op))));
    if (save) {
      BlockArgument mapped = newArgument(next.getType(), next.getLoc());
      savedValues.push_back(next);
      savedArguments.push_back(mapped);
      inBackward.map(next, mapped);
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (Value operand : llvm::reverse(op->getOperands()))
        if (!inBackward.contains(operand))
          stack.push_back({operand, false});
      continue;
    }
    recompute(op);
    stack.pop_back();
  }
  return inBackward.lookup(value);
}

/// Clones `op`, whose operands are all mapped, into the backward body right
/// after the last of them, so recomputations always precede the gradient
/// ops that read them.
void Differentiator::recompute(Operation *op) {
  Operation *after = nullptr;
  for (Value operand : op->getOperands()) {
    Operation *def = inBackward.lookup(operand).getDefiningOp();
    if (def && (!after || after->isBeforeInBlock(def)))
      after = def;
  }
  OpBuilder::InsertionGuard guard(builder);
  if (after)
    builder.setInsertionPointAfter(after);
  else
    builder.setInsertionPointToStart(body);
  builder.clone(*op, inBackward);
}

void Differentiator::addCotangent(Value value, Value contribution) {
  auto [it, inserted] = cotangents.try_emplace(value, contribution);
  if (!inserted)
    it->second = add(it->second, contribution);
}

Value Differentiator::aggregateSum(Value edge, Type nodeType,
                                   hg::Endpoint into) {
  MLIRContext *ctx = builder.getContext();
  return hg::AggregateOp::create(
             builder, loc, nodeType, edge, hg::Reduction::Sum,
             into == hg::Endpoint::Dst ? hg::EndpointAttr()
                                       : hg::EndpointAttr::get(ctx, into))
      .getResult();
}

//===----------------------------------------------------------------------===//
// Vector-Jacobian rules
//===----------------------------------------------------------------------===//

/// `y = x · W[k]` (or `x · W[k]ᵀ`), rows read `from` an endpoint.
LogicalResult Differentiator::pullbackTypedLinear(hg::TypedLinearOp op,
                                                  Value dy) {
  Value weight = op.getWeight(), x = op.getInput();
  auto weightType = cast<hg::WeightType>(weight.getType());
  auto xType = cast<hg::FeatureType>(x.getType());
  auto dyType = cast<hg::FeatureType>(dy.getType());
  hg::Endpoint from = op.getFrom();
  bool atEndpoint = from == hg::Endpoint::Src || from == hg::Endpoint::Dst;
  bool edgeTyped = weightType.getIndex() == hg::WeightIndex::EdgeType;
  bool transposed = op.getTranspose();

  // A weight that does not depend on the edge type is the same for every
  // edge leaving a node: sum the edge gradients per node first, then apply
  // the weight once per node (E·in·out multiply-adds become N·in·out).
  Value dyPerNode;
  if (atEndpoint && !edgeTyped)
    dyPerNode = aggregateSum(dy,
                             hg::NodeValueType::get(dyType.getWidth(),
                                                    dyType.getElementType(),
                                                    dyType.getHeads()),
                             from);

  if (isActive(x)) {
    auto linear = [&](Value rows, hg::Endpoint rowsFrom, Type type) {
      return hg::TypedLinearOp::create(builder, loc, type, forward(weight),
                                       rows, rowsFrom, !transposed)
          .getResult();
    };
    Value dx;
    if (!atEndpoint)
      dx = linear(dy, from, xType);
    else if (dyPerNode)
      dx = linear(dyPerNode, hg::Endpoint::Node, xType);
    else
      dx = aggregateSum(linear(dy, hg::Endpoint::Edge,
                               hg::EdgeValueType::get(xType.getWidth(),
                                                      xType.getElementType(),
                                                      xType.getHeads())),
                        xType, from);
    addCotangent(x, dx);
  }

  if (isActive(weight)) {
    Value dW;
    if (transposed && atEndpoint)
      return op.emitError("hgraph-autodiff: no gradient rule for the weight "
                          "of a transposed typed_linear read at an edge "
                          "endpoint");
    if (transposed) // y = x · Wᵀ: dW[k] = Σ dyᵀ ⊗ x
      dW = make<hg::WeightGradOp>(weightType, dy, forward(x), from);
    else if (dyPerNode)
      dW = make<hg::WeightGradOp>(weightType, forward(x), dyPerNode,
                                  hg::Endpoint::Node);
    else
      dW = make<hg::WeightGradOp>(weightType, forward(x), dy, from);
    addCotangent(weight, dW);
  }
  return success();
}

void Differentiator::pullbackAggregate(hg::AggregateOp op, Value dy) {
  Value x = op.getInput();
  Type edgeType = x.getType();
  hg::Endpoint at = op.getReceiver();
  Value spread = gather(dy, edgeType, at);
  switch (op.getKind()) {
  case hg::Reduction::Sum:
    addCotangent(x, spread);
    return;
  case hg::Reduction::Mean: {
    auto norm = hg::EdgeValueType::get(
        1, cast<hg::FeatureType>(edgeType).getElementType());
    Value inverseDegree = make<hg::DegreeNormOp>(norm, graph());
    addCotangent(x, make<hg::ScaleOp>(edgeType, inverseDegree, spread));
    return;
  }
  case hg::Reduction::Max: {
    // The gradient of a maximum is shared evenly by the edges that attain
    // it (as torch's amax does).
    Value maximum = gather(forward(op.getResult()), edgeType, at);
    Value attains = make<hg::EqualOp>(edgeType, forward(x), maximum);
    Value count = aggregateSum(attains, op.getType(), at);
    Value share =
        make<hg::DivOp>(edgeType, attains, gather(count, edgeType, at));
    addCotangent(x, mul(spread, share));
    return;
  }
  }
}

/// α = softmax(s) over incoming edges: ds = α ⊙ (dα − Σ_in α ⊙ dα), the
/// sum over the edge's softmax group (its destination's incoming edges, or
/// those of its edge type with `by_type`).
void Differentiator::pullbackEdgeSoftmax(hg::EdgeSoftmaxOp op, Value dAlpha) {
  auto type = cast<hg::FeatureType>(op.getType());
  Value alpha = forward(op.getResult());
  Value weighted = mul(alpha, dAlpha);
  Value spread;
  if (op.getByType()) {
    spread = make<hg::GroupSumOp>(type, weighted);
  } else {
    Value perNode = aggregateSum(
        weighted,
        hg::NodeValueType::get(type.getWidth(), type.getElementType(),
                               type.getHeads()),
        hg::Endpoint::Dst);
    spread = gather(perNode, type, hg::Endpoint::Dst);
  }
  addCotangent(op.getInput(),
               make<hg::SubOp>(type, weighted, mul(alpha, spread)));
}

LogicalResult Differentiator::pullback(Operation *op) {
  Value dy =
      op->getNumResults() == 1 ? cotangents.lookup(op->getResult(0)) : Value();
  if (!dy)
    return success(); // no result reaches a differentiated output
  loc = op->getLoc();
  auto contribute = [&](Value operand, function_ref<Value()> rule) {
    if (isActive(operand))
      addCotangent(operand, rule());
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](hg::TypedLinearOp o) { return pullbackTypedLinear(o, dy); })
      .Case([&](hg::TypedVectorOp o) {
        contribute(o.getWeight(), [&] {
          return make<hg::TypeSumOp>(o.getWeight().getType(), dy);
        });
        return success();
      })
      .Case([&](hg::WeightProductOp o) -> LogicalResult {
        // R = A · b (b a column): dA = dR ⊗ b, db = dR · A (dR a row);
        // R = a · B (a a row): da = B · dR, dB = a ⊗ dR. With `heads`
        // (R = A · b cut into head blocks, [m, H]) the same formulas with
        // `heads` (hgraph.weight_product's description). Per type, both
        // factors indexed like R (linear reordering's `differentiable`
        // mode creates no other products before autodiff).
        auto lhsType = cast<hg::WeightType>(o.getLhs().getType());
        auto rhsType = cast<hg::WeightType>(o.getRhs().getType());
        IntegerAttr heads = o.getHeadsAttr();
        if (o.getNodeOf() || lhsType.getIndex() != rhsType.getIndex() ||
            lhsType.isVector() == rhsType.isVector() ||
            (heads && !rhsType.isVector()))
          return o.emitError("hgraph-autodiff: no gradient rule for a "
                             "product of two matrices or of weights indexed "
                             "differently; run linear reordering after "
                             "autodiff (or with differentiable=true)");
        bool columnOnRight = rhsType.isVector();
        contribute(o.getLhs(), [&]() -> Value {
          if (columnOnRight)
            return make<hg::WeightOuterOp>(lhsType, dy, forward(o.getRhs()),
                                           heads);
          return make<hg::WeightProductOp>(lhsType, forward(o.getRhs()), dy,
                                           hg::EndpointAttr(), IntegerAttr());
        });
        contribute(o.getRhs(), [&]() -> Value {
          if (columnOnRight)
            return make<hg::WeightProductOp>(rhsType, dy, forward(o.getLhs()),
                                             hg::EndpointAttr(), heads);
          return make<hg::WeightOuterOp>(rhsType, forward(o.getLhs()), dy,
                                         IntegerAttr());
        });
        return success();
      })
      .Case([&](hg::GatherOp o) {
        contribute(o.getInput(), [&] {
          return aggregateSum(dy, o.getInput().getType(), o.getFrom());
        });
        return success();
      })
      .Case([&](hg::AggregateOp o) {
        pullbackAggregate(o, dy);
        return success();
      })
      .Case([&](hg::EdgeSoftmaxOp o) {
        pullbackEdgeSoftmax(o, dy);
        return success();
      })
      .Case([&](hg::GroupSumOp o) {
        // Each edge's group sum is linear and symmetric: its own adjoint.
        contribute(o.getInput(),
                   [&] { return make<hg::GroupSumOp>(o.getType(), dy); });
        return success();
      })
      .Case([&](hg::DotOp o) {
        Type type = o.getLhs().getType();
        contribute(o.getLhs(), [&] {
          return make<hg::ScaleOp>(type, dy, forward(o.getRhs()));
        });
        contribute(o.getRhs(), [&] {
          return make<hg::ScaleOp>(type, dy, forward(o.getLhs()));
        });
        return success();
      })
      .Case([&](hg::ScaleOp o) -> LogicalResult {
        auto scaleType = cast<hg::FeatureType>(o.getScale().getType());
        auto inputType = cast<hg::FeatureType>(o.getInput().getType());
        if (isActive(o.getScale()) &&
            scaleType.getWidth() != inputType.getHeads())
          return o.emitError("hgraph-autodiff: no gradient rule for a "
                             "one-column scale of a multi-head value; give "
                             "the scale one column per head");
        contribute(o.getInput(), [&] {
          return make<hg::ScaleOp>(inputType, forward(o.getScale()), dy);
        });
        contribute(o.getScale(), [&] {
          return make<hg::DotOp>(scaleType, dy, forward(o.getInput()));
        });
        return success();
      })
      .Case([&](hg::ConstScaleOp o) {
        contribute(o.getInput(), [&] {
          return make<hg::ConstScaleOp>(dy.getType(), dy, o.getFactorAttr());
        });
        return success();
      })
      .Case([&](hg::ConcatOp o) {
        int64_t offset = 0;
        for (Value input : o.getInputs()) {
          contribute(input, [&] {
            return make<hg::SliceOp>(input.getType(), dy,
                                     builder.getI64IntegerAttr(offset));
          });
          offset += cast<hg::FeatureType>(input.getType()).getHeadWidth();
        }
        return success();
      })
      .Case([&](hg::AddOp o) {
        contribute(o.getLhs(), [&] { return dy; });
        contribute(o.getRhs(), [&] { return dy; });
        return success();
      })
      .Case([&](hg::SubOp o) {
        contribute(o.getLhs(), [&] { return dy; });
        contribute(o.getRhs(),
                   [&] { return make<hg::NegOp>(dy.getType(), dy); });
        return success();
      })
      .Case([&](hg::MulOp o) {
        contribute(o.getLhs(), [&] { return mul(dy, forward(o.getRhs())); });
        contribute(o.getRhs(), [&] { return mul(dy, forward(o.getLhs())); });
        return success();
      })
      .Case([&](hg::DivOp o) {
        // z = a / b: da = dy / b, db = -da · z.
        Value da = make<hg::DivOp>(dy.getType(), dy, forward(o.getRhs()));
        contribute(o.getLhs(), [&] { return da; });
        contribute(o.getRhs(), [&] {
          return make<hg::NegOp>(dy.getType(), mul(da, forward(o.getResult())));
        });
        return success();
      })
      .Case([&](hg::ExpOp o) {
        contribute(o.getInput(), [&] { return mul(dy, forward(o)); });
        return success();
      })
      .Case([&](hg::TanhOp o) {
        // dx = dy − dy·y·y
        contribute(o.getInput(), [&] {
          Value y = forward(o);
          return make<hg::SubOp>(dy.getType(), dy, mul(mul(dy, y), y));
        });
        return success();
      })
      .Case([&](hg::SigmoidOp o) {
        // dx = dy·y − dy·y·y
        contribute(o.getInput(), [&] {
          Value y = forward(o);
          Value dyY = mul(dy, y);
          return make<hg::SubOp>(dy.getType(), dyY, mul(dyY, y));
        });
        return success();
      })
      .Case([&](hg::GeluOp o) {
        // dx = dy·(Φ(x) + x·φ(x)): from the input, which the result does
        // not determine (GELU is not monotonic below x ≈ −0.75).
        contribute(o.getInput(), [&] {
          return make<hg::GeluGradOp>(dy.getType(), dy, forward(o.getInput()));
        });
        return success();
      })
      .Case([&](hg::NegOp o) {
        contribute(o.getInput(),
                   [&] { return make<hg::NegOp>(dy.getType(), dy); });
        return success();
      })
      .Case([&](hg::ReluOp o) {
        contribute(o.getInput(), [&] {
          return make<hg::LeakyReluGradOp>(dy.getType(), dy,
                                           forward(o.getInput()),
                                           builder.getF64FloatAttr(0.0));
        });
        return success();
      })
      .Case([&](hg::LeakyReluOp o) {
        // The slope depends on the sign of the input, which a non-negative
        // slope keeps: the result tells it too. It is read instead when
        // the forward stores it anyway (an attention score, say), so that
        // the backward does not recompute the input's expression.
        bool fromResult = o.getAlpha().convertToDouble() >= 0 &&
                          policy != SavePolicy::None && isMaterialized(o);
        contribute(o.getInput(), [&] {
          return make<hg::LeakyReluGradOp>(
              dy.getType(), dy, forward(fromResult ? o.getResult()
                                                   : o.getInput()),
              o.getAlphaAttr());
        });
        return success();
      })
      .Case([&](hg::DropoutOp o) {
        // y = x ⊙ mask / (1 − p) is linear in x with the same mask, which
        // the backward redraws from the seed instead of saving it.
        contribute(o.getInput(), [&] {
          return make<hg::DropoutOp>(dy.getType(), dy, forward(o.getSeed()),
                                     o.getPAttr());
        });
        return success();
      })
      .Case<hg::RelationNormOp, hg::DegreeNormOp, hg::ZerosOp, hg::EqualOp>(
          [](Operation *) { return success(); }) // nothing active flows in
      .Default([](Operation *other) {
        return other->emitError("hgraph-autodiff: no gradient rule for '")
               << other->getName() << "'";
      });
}

//===----------------------------------------------------------------------===//
// The two functions
//===----------------------------------------------------------------------===//

/// Orders the backward arguments as the ABI wants them (graph, primal
/// arguments, saved values, result gradients), names them, and returns the
/// gradient of every differentiated argument.
void Differentiator::finishBackward() {
  MLIRContext *ctx = primal.getContext();
  auto attrs = [&](StringRef name, StringRef role,
                   DictionaryAttr primalAttrs = {}) {
    SmallVector<NamedAttribute, 3> list{
        builder.getNamedAttr(kName, builder.getStringAttr(name))};
    if (!role.empty())
      list.push_back(builder.getNamedAttr(kRole, builder.getStringAttr(role)));
    if (std::optional<NamedAttribute> layout = materializationOf(primalAttrs))
      list.push_back(*layout);
    return DictionaryAttr::get(ctx, list);
  };

  // The results: one gradient per differentiated argument.
  SmallVector<Value> gradients;
  SmallVector<Attribute> resultAttrs;
  Block &entry = primal.getBody().front();
  builder.setInsertionPointToEnd(body);
  for (BlockArgument arg : entry.getArguments()) {
    if (isa<hg::GraphType>(arg.getType()))
      continue;
    std::string name = primal.getArgumentName(arg.getArgNumber());
    if (!wrt.contains(name))
      continue;
    Value gradient = cotangents.lookup(arg);
    if (!gradient)
      gradient = make<hg::ZerosOp>(arg.getType());
    gradients.push_back(gradient);
    resultAttrs.push_back(attrs("d_" + name, "grad",
                                primal.getArgAttrDict(arg.getArgNumber())));
  }
  hg::ReturnOp::create(builder, loc, gradients);

  // The arguments, reordered.
  SmallVector<std::pair<BlockArgument, DictionaryAttr>> ordered;
  ordered.push_back({body->getArgument(0), DictionaryAttr::get(ctx)});
  for (BlockArgument arg : entry.getArguments()) {
    auto it = primalArguments.find(arg.getArgNumber());
    if (it != primalArguments.end())
      ordered.push_back(
          {it->second, attrs(primal.getArgumentName(arg.getArgNumber()), "",
                             primal.getArgAttrDict(arg.getArgNumber()))});
  }
  for (auto [index, arg] : llvm::enumerate(savedArguments))
    ordered.push_back({arg, attrs(("saved" + Twine(index)).str(), "saved")});
  for (auto [index, arg] : llvm::enumerate(resultGradients))
    ordered.push_back({arg, attrs("d_" + resultName(primal, index),
                                  "grad_output",
                                  primal.getResultAttrDict(index))});

  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  for (auto [arg, attr] : ordered) {
    argTypes.push_back(arg.getType());
    argAttrs.push_back(attr);
  }
  SmallVector<Type> resultTypes;
  for (Value gradient : gradients)
    resultTypes.push_back(gradient.getType());

  builder.setInsertionPointAfter(primal);
  auto backward = hg::FuncOp::create(
      builder, primal.getLoc(), (primal.getSymName() + "_bwd").str(),
      builder.getFunctionType(argTypes, resultTypes), StringAttr(),
      builder.getArrayAttr(argAttrs), builder.getArrayAttr(resultAttrs));
  backward->setAttr(kKind, builder.getStringAttr("training_backward"));
  backward->setAttr(kPrimal, builder.getStringAttr(primal.getSymName()));
  Block *ordered_body = new Block();
  backward.getBody().push_back(ordered_body);
  for (auto [arg, attr] : ordered)
    arg.replaceAllUsesWith(
        ordered_body->addArgument(arg.getType(), arg.getLoc()));
  ordered_body->getOperations().splice(ordered_body->end(),
                                       body->getOperations());
  delete body;
  body = nullptr;
}

/// `@f_fwd`: a copy of `@f` that also returns the saved values.
void Differentiator::buildForward() {
  MLIRContext *ctx = primal.getContext();
  builder.setInsertionPointAfter(primal);
  auto training = cast<hg::FuncOp>(builder.clone(*primal));
  training.setSymName((primal.getSymName() + "_fwd").str());
  training->setAttr(kKind, builder.getStringAttr("training_forward"));
  training->setAttr(kPrimal, builder.getStringAttr(primal.getSymName()));

  // Map primal values to the copy's by position.
  IRMapping toCopy;
  Block &from = primal.getBody().front(), &to = training.getBody().front();
  for (auto [a, b] : llvm::zip(from.getArguments(), to.getArguments()))
    toCopy.map(a, b);
  for (auto [a, b] : llvm::zip(from, to))
    for (auto [ra, rb] : llvm::zip(a.getResults(), b.getResults()))
      toCopy.map(ra, rb);

  auto ret = cast<hg::ReturnOp>(to.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> resultAttrs;
  auto attrs = [&](StringRef name, StringRef role,
                   DictionaryAttr primalAttrs = {}) {
    SmallVector<NamedAttribute, 3> list{
        builder.getNamedAttr(kName, builder.getStringAttr(name)),
        builder.getNamedAttr(kRole, builder.getStringAttr(role))};
    if (std::optional<NamedAttribute> layout = materializationOf(primalAttrs))
      list.push_back(*layout);
    return DictionaryAttr::get(ctx, list);
  };
  for (unsigned i = 0, e = results.size(); i < e; ++i)
    resultAttrs.push_back(attrs(resultName(primal, i), "output",
                                primal.getResultAttrDict(i)));
  for (auto [index, value] : llvm::enumerate(savedValues)) {
    results.push_back(toCopy.lookup(value));
    resultAttrs.push_back(attrs(("saved" + Twine(index)).str(), "saved"));
  }
  ret->setOperands(results);
  SmallVector<Type> resultTypes;
  for (Value value : results)
    resultTypes.push_back(value.getType());
  training.setFunctionType(
      builder.getFunctionType(training.getArgumentTypes(), resultTypes));
  training.setAllResultAttrs(resultAttrs);
}

LogicalResult Differentiator::run() {
  if (failed(findActiveValues()) || failed(checkCompactValues()))
    return failure();
  SymbolTable symbols(primal->getParentOp());
  for (StringRef suffix : {"_fwd", "_bwd"})
    if (symbols.lookup((primal.getSymName() + suffix).str()))
      return primal.emitError("hgraph-autodiff: cannot add @")
             << primal.getSymName() << suffix
             << ": a symbol of that name exists";

  body = new Block();
  Block &entry = primal.getBody().front();
  inBackward.map(primal.getGraph(),
                 body->addArgument(primal.getGraph().getType(), loc));
  builder.setInsertionPointToEnd(body);
  auto ret = cast<hg::ReturnOp>(entry.getTerminator());
  for (Value result : ret.getOperands()) {
    BlockArgument gradient = newArgument(result.getType(), result.getLoc());
    resultGradients.push_back(gradient);
    if (isActive(result))
      addCotangent(result, gradient);
  }
  for (Operation &op : llvm::reverse(entry.without_terminator())) {
    if (failed(pullback(&op))) {
      delete body;
      return failure();
    }
  }
  finishBackward();
  buildForward();
  return success();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct HGraphAutodiffPass
    : public hector::impl::HGraphAutodiffBase<HGraphAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<SavePolicy> policy =
        llvm::StringSwitch<std::optional<SavePolicy>>(save)
            .Case("materialized", SavePolicy::Materialized)
            .Case("all", SavePolicy::All)
            .Case("none", SavePolicy::None)
            .Default(std::nullopt);
    if (!policy) {
      module.emitError("hgraph-autodiff: unknown save policy '")
          << save << "' (one of: materialized, all, none)";
      return signalPassFailure();
    }

    SmallVector<hg::FuncOp> primals;
    for (hg::FuncOp func : module.getOps<hg::FuncOp>())
      if (!func->hasAttr(kKind))
        primals.push_back(func);
    for (hg::FuncOp func : primals) {
      // The arguments to differentiate: the named ones, or all.
      llvm::StringSet<> names, known, seeds;
      for (BlockArgument arg : func.getArguments())
        if (isa<hg::SeedType>(arg.getType()))
          seeds.insert(func.getArgumentName(arg.getArgNumber()));
        else if (!isa<hg::GraphType>(arg.getType()))
          known.insert(func.getArgumentName(arg.getArgNumber()));
      for (const std::string &name : wrt) {
        if (seeds.contains(name)) {
          func.emitError("hgraph-autodiff: 'wrt' names '")
              << name << "', a seed, which has no gradient";
          return signalPassFailure();
        }
        if (!known.contains(name)) {
          func.emitError("hgraph-autodiff: 'wrt' names '")
              << name << "', which is not an argument of @"
              << func.getSymName();
          return signalPassFailure();
        }
        names.insert(name);
      }
      if (wrt.empty())
        names = std::move(known);
      func->setAttr(kKind, StringAttr::get(&getContext(), "inference"));
      if (failed(Differentiator(func, *policy, names).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
