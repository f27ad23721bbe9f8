//===- HGraphVJP.cpp - vector-Jacobian rules of the hgraph ops -*- C++ -*-===//
//
// Each differentiable op's VJPOpInterface::buildPullback: given `dy`, the
// gradient of its result, it adds the gradient of each active operand,
// written with hgraph ops (the table in docs/training.md), through the
// PullbackBuilder that hgraph-autodiff implements.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/IR/PullbackBuilder.h"

using namespace mlir;
using namespace hector::hgraph;

#include "hector/Dialect/HGraph/IR/HGraphOpInterfaces.cpp.inc"

PullbackBuilder::~PullbackBuilder() = default;

Value PullbackBuilder::aggregateSum(Value edge, Type nodeType, Endpoint into) {
  MLIRContext *ctx = getBuilder().getContext();
  return AggregateOp::create(
             getBuilder(), getLoc(), nodeType, edge, Reduction::Sum,
             into == Endpoint::Dst ? EndpointAttr()
                                   : EndpointAttr::get(ctx, into))
      .getResult();
}

//===----------------------------------------------------------------------===//
// Typed linear maps and typed parameters
//===----------------------------------------------------------------------===//

/// `y = x · W[k]` (or `x · W[k]ᵀ`), rows read `from` an endpoint.
LogicalResult TypedLinearOp::buildPullback(PullbackBuilder &builder, Value dy) {
  Value weight = getWeight(), x = getInput();
  auto weightType = cast<WeightType>(weight.getType());
  auto xType = cast<FeatureType>(x.getType());
  auto dyType = cast<FeatureType>(dy.getType());
  Endpoint from = getFrom();
  bool atEndpoint = from == Endpoint::Src || from == Endpoint::Dst;
  bool edgeTyped = weightType.getIndex() == WeightIndex::EdgeType;
  bool transposed = getTranspose();

  // A weight that does not depend on the edge type is the same for every
  // edge leaving a node: sum the edge gradients per node first, then apply
  // the weight once per node (E·in·out multiply-adds become N·in·out).
  Value dyPerNode;
  if (atEndpoint && !edgeTyped)
    dyPerNode = builder.aggregateSum(dy,
                                     NodeValueType::get(dyType.getWidth(),
                                                        dyType.getElementType(),
                                                        dyType.getHeads()),
                                     from);

  if (builder.isActive(x)) {
    auto linear = [&](Value rows, Endpoint rowsFrom, Type type) {
      return builder.make<TypedLinearOp>(type, builder.forward(weight), rows,
                                         rowsFrom, !transposed);
    };
    Value dx;
    if (!atEndpoint)
      dx = linear(dy, from, xType);
    else if (dyPerNode)
      dx = linear(dyPerNode, Endpoint::Node, xType);
    else
      dx = builder.aggregateSum(
          linear(dy, Endpoint::Edge,
                 EdgeValueType::get(xType.getWidth(), xType.getElementType(),
                                    xType.getHeads())),
          xType, from);
    builder.addCotangent(x, dx);
  }

  if (builder.isActive(weight)) {
    Value dW;
    if (transposed && atEndpoint)
      return emitError("hgraph-autodiff: no gradient rule for the weight "
                       "of a transposed typed_linear read at an edge "
                       "endpoint");
    if (transposed) // y = x · Wᵀ: dW[k] = Σ dyᵀ ⊗ x
      dW = builder.make<WeightGradOp>(weightType, dy, builder.forward(x), from);
    else if (dyPerNode)
      dW = builder.make<WeightGradOp>(weightType, builder.forward(x), dyPerNode,
                                      Endpoint::Node);
    else
      dW = builder.make<WeightGradOp>(weightType, builder.forward(x), dy, from);
    builder.addCotangent(weight, dW);
  }
  return success();
}

LogicalResult TypedVectorOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getWeight(), [&] {
    return builder.make<TypeSumOp>(getWeight().getType(), dy);
  });
  return success();
}

/// R = A · b (b a column): dA = dR ⊗ b, db = dR · A (dR a row);
/// R = a · B (a a row): da = B · dR, dB = a ⊗ dR. With `heads` (R = A · b
/// cut into head blocks, [m, H]) the same formulas with `heads`
/// (hgraph.weight_product's description). Per type, both factors indexed
/// like R (linear reordering's `differentiable` mode creates no other
/// products before autodiff).
LogicalResult WeightProductOp::buildPullback(PullbackBuilder &builder,
                                             Value dy) {
  auto lhsType = cast<WeightType>(getLhs().getType());
  auto rhsType = cast<WeightType>(getRhs().getType());
  IntegerAttr heads = getHeadsAttr();
  if (getNodeOf() || lhsType.getIndex() != rhsType.getIndex() ||
      lhsType.isVector() == rhsType.isVector() ||
      (heads && !rhsType.isVector()))
    return emitError("hgraph-autodiff: no gradient rule for a "
                     "product of two matrices or of weights indexed "
                     "differently; run linear reordering after "
                     "autodiff (or with differentiable=true)");
  bool columnOnRight = rhsType.isVector();
  builder.contribute(getLhs(), [&]() -> Value {
    if (columnOnRight)
      return builder.make<WeightOuterOp>(lhsType, dy, builder.forward(getRhs()),
                                         heads);
    return builder.make<WeightProductOp>(lhsType, builder.forward(getRhs()), dy,
                                         EndpointAttr(), IntegerAttr());
  });
  builder.contribute(getRhs(), [&]() -> Value {
    if (columnOnRight)
      return builder.make<WeightProductOp>(
          rhsType, dy, builder.forward(getLhs()), EndpointAttr(), heads);
    return builder.make<WeightOuterOp>(rhsType, builder.forward(getLhs()), dy,
                                       IntegerAttr());
  });
  return success();
}

/// Constant: no operand varies, so nothing active flows in.
LogicalResult ZerosOp::buildPullback(PullbackBuilder &, Value) {
  return success();
}

//===----------------------------------------------------------------------===//
// Graph access
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    return builder.aggregateSum(dy, getInput().getType(), getFrom());
  });
  return success();
}

/// Graph constants: nothing active flows in.
LogicalResult RelationNormOp::buildPullback(PullbackBuilder &, Value) {
  return success();
}
LogicalResult DegreeNormOp::buildPullback(PullbackBuilder &, Value) {
  return success();
}

LogicalResult AggregateOp::buildPullback(PullbackBuilder &builder, Value dy) {
  Value x = getInput();
  Type edgeType = x.getType();
  Endpoint at = getReceiver();
  Value spread = builder.gather(dy, edgeType, at);
  switch (getKind()) {
  case Reduction::Sum:
    builder.addCotangent(x, spread);
    break;
  case Reduction::Mean: {
    auto norm =
        EdgeValueType::get(1, cast<FeatureType>(edgeType).getElementType());
    Value inverseDegree = builder.make<DegreeNormOp>(norm, builder.getGraph());
    builder.addCotangent(
        x, builder.make<ScaleOp>(edgeType, inverseDegree, spread));
    break;
  }
  case Reduction::Max: {
    // The gradient of a maximum is shared evenly by the edges that attain
    // it (as torch's amax does).
    Value maximum = builder.gather(builder.forward(getResult()), edgeType, at);
    Value attains =
        builder.make<EqualOp>(edgeType, builder.forward(x), maximum);
    Value count = builder.aggregateSum(attains, getType(), at);
    Value share = builder.make<DivOp>(edgeType, attains,
                                      builder.gather(count, edgeType, at));
    builder.addCotangent(x, builder.mul(spread, share));
    break;
  }
  }
  return success();
}

/// α = softmax(s) over incoming edges: ds = α ⊙ (dα − Σ_in α ⊙ dα), the
/// sum over the edge's softmax group (its destination's incoming edges, or
/// those of its edge type with `by_type`).
LogicalResult EdgeSoftmaxOp::buildPullback(PullbackBuilder &builder,
                                           Value dAlpha) {
  auto type = cast<FeatureType>(getType());
  Value alpha = builder.forward(getResult());
  Value weighted = builder.mul(alpha, dAlpha);
  Value spread;
  if (getByType()) {
    spread = builder.make<GroupSumOp>(type, weighted);
  } else {
    Value perNode = builder.aggregateSum(
        weighted,
        NodeValueType::get(type.getWidth(), type.getElementType(),
                           type.getHeads()),
        Endpoint::Dst);
    spread = builder.gather(perNode, type, Endpoint::Dst);
  }
  builder.addCotangent(
      getInput(),
      builder.make<SubOp>(type, weighted, builder.mul(alpha, spread)));
  return success();
}

/// Each edge's group sum is linear and symmetric: its own adjoint.
LogicalResult GroupSumOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(),
                     [&] { return builder.make<GroupSumOp>(getType(), dy); });
  return success();
}

//===----------------------------------------------------------------------===//
// Row-wise math
//===----------------------------------------------------------------------===//

LogicalResult DotOp::buildPullback(PullbackBuilder &builder, Value dy) {
  Type type = getLhs().getType();
  builder.contribute(getLhs(), [&] {
    return builder.make<ScaleOp>(type, dy, builder.forward(getRhs()));
  });
  builder.contribute(getRhs(), [&] {
    return builder.make<ScaleOp>(type, dy, builder.forward(getLhs()));
  });
  return success();
}

LogicalResult ScaleOp::buildPullback(PullbackBuilder &builder, Value dy) {
  auto scaleType = cast<FeatureType>(getScale().getType());
  auto inputType = cast<FeatureType>(getInput().getType());
  if (builder.isActive(getScale()) &&
      scaleType.getWidth() != inputType.getHeads())
    return emitError("hgraph-autodiff: no gradient rule for a "
                     "one-column scale of a multi-head value; give "
                     "the scale one column per head");
  builder.contribute(getInput(), [&] {
    return builder.make<ScaleOp>(inputType, builder.forward(getScale()), dy);
  });
  builder.contribute(getScale(), [&] {
    return builder.make<DotOp>(scaleType, dy, builder.forward(getInput()));
  });
  return success();
}

LogicalResult ConstScaleOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    return builder.make<ConstScaleOp>(dy.getType(), dy, getFactorAttr());
  });
  return success();
}

LogicalResult ConcatOp::buildPullback(PullbackBuilder &builder, Value dy) {
  int64_t offset = 0;
  for (Value input : getInputs()) {
    builder.contribute(input, [&] {
      return builder.make<SliceOp>(
          input.getType(), dy, builder.getBuilder().getI64IntegerAttr(offset));
    });
    offset += cast<FeatureType>(input.getType()).getHeadWidth();
  }
  return success();
}

LogicalResult AddOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getLhs(), [&] { return dy; });
  builder.contribute(getRhs(), [&] { return dy; });
  return success();
}

LogicalResult SubOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getLhs(), [&] { return dy; });
  builder.contribute(getRhs(),
                     [&] { return builder.make<NegOp>(dy.getType(), dy); });
  return success();
}

LogicalResult MulOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(
      getLhs(), [&] { return builder.mul(dy, builder.forward(getRhs())); });
  builder.contribute(
      getRhs(), [&] { return builder.mul(dy, builder.forward(getLhs())); });
  return success();
}

/// z = a / b: da = dy / b, db = -da · z.
LogicalResult DivOp::buildPullback(PullbackBuilder &builder, Value dy) {
  Value da = builder.make<DivOp>(dy.getType(), dy, builder.forward(getRhs()));
  builder.contribute(getLhs(), [&] { return da; });
  builder.contribute(getRhs(), [&] {
    return builder.make<NegOp>(dy.getType(),
                               builder.mul(da, builder.forward(getResult())));
  });
  return success();
}

/// Piecewise constant: autodiff finds no operand active through it.
LogicalResult EqualOp::buildPullback(PullbackBuilder &, Value) {
  return success();
}

LogicalResult ExpOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    return builder.mul(dy, builder.forward(getResult()));
  });
  return success();
}

/// dx = dy − dy·y·y
LogicalResult TanhOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    Value y = builder.forward(getResult());
    return builder.make<SubOp>(dy.getType(), dy,
                               builder.mul(builder.mul(dy, y), y));
  });
  return success();
}

/// dx = dy·y − dy·y·y
LogicalResult SigmoidOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    Value y = builder.forward(getResult());
    Value dyY = builder.mul(dy, y);
    return builder.make<SubOp>(dy.getType(), dyY, builder.mul(dyY, y));
  });
  return success();
}

/// dx = dy·(Φ(x) + x·φ(x)): from the input, which the result does not
/// determine (GELU is not monotonic below x ≈ −0.75).
LogicalResult GeluOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    return builder.make<GeluGradOp>(dy.getType(), dy,
                                    builder.forward(getInput()));
  });
  return success();
}

LogicalResult NegOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(),
                     [&] { return builder.make<NegOp>(dy.getType(), dy); });
  return success();
}

LogicalResult ReluOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    return builder.make<LeakyReluGradOp>(
        dy.getType(), dy, builder.forward(getInput()),
        builder.getBuilder().getF64FloatAttr(0.0));
  });
  return success();
}

/// The slope depends on the sign of the input, which a non-negative slope
/// keeps: the result tells it too. It is read instead when the forward
/// stores it anyway (an attention score, say), so that the backward does
/// not recompute the input's expression.
LogicalResult LeakyReluOp::buildPullback(PullbackBuilder &builder, Value dy) {
  bool fromResult = getAlpha().convertToDouble() >= 0 &&
                    builder.savesStoredValues() &&
                    isStoredByLowering(getResult());
  builder.contribute(getInput(), [&] {
    return builder.make<LeakyReluGradOp>(
        dy.getType(), dy,
        builder.forward(fromResult ? getResult() : getInput()), getAlphaAttr());
  });
  return success();
}

/// y = x ⊙ mask / (1 − p) is linear in x with the same mask, which the
/// backward redraws from the seed instead of saving it.
LogicalResult DropoutOp::buildPullback(PullbackBuilder &builder, Value dy) {
  builder.contribute(getInput(), [&] {
    return builder.make<DropoutOp>(dy.getType(), dy, builder.forward(getSeed()),
                                   getPAttr());
  });
  return success();
}
