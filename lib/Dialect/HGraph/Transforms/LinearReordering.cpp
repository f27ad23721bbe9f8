//===- LinearReordering.cpp - weight-only products first --------*- C++ -*-===//
//
// Linear operator reordering (BRIEF.md §3): when a linear operator is applied
// to the result of another one and the swap yields a product between weights
// only, multiply the weights first (hgraph.weight_product, once per type) and
// let the graph data go through a single operator. Four rules:
//
//   dot(x·W, a)        -> dot(x, W·a)       dot of a typed linear map with a
//                                           typed vector (RGAT's attention)
//   dot_H(x·W, a)      -> x·(W·a heads H)   the same per head with a full
//                                           matrix W (RGAT with H heads): an
//                                           [in, H] map
//   (x·W1)·W2          -> x·(W1·W2)         two chained typed linear maps
//                                           (HGT's k_s W^att, v_s W^msg)
//   (s·a)·W            -> s·(a·W)           a scaled typed vector fed to a
//                                           typed linear map (the input
//                                           gradient of the first rule)
//
// with the transposed forms (x·Wᵀ) that autodiff writes. Each rule checks
// that the swap is exact head by head, then compares multiply-add counts,
// polynomials in the graph's sizes N, E, P, R, T, evaluated at the sizes the
// pass is given (or defaults, docs/optimizations.md). The counts include the
// operators a rewrite leaves without users, which are erased.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/Transforms/Passes.h"
#include "hector/Dialect/HGraph/Transforms/GraphSizes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <array>

namespace hector {
#define GEN_PASS_DEF_LINEARREORDERING
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using namespace hector::hgraph;
using namespace hector::hgraph::graph_sizes;

namespace {

//===----------------------------------------------------------------------===//
// Symbolic multiply-add counts
//===----------------------------------------------------------------------===//

/// A multiply-add count, symbolic in the graph's sizes.
using Cost = graph_sizes::Count;

/// Multiply-adds of one row through a matrix or per-head weight slice.
double sliceMacs(WeightType weight) {
  ArrayRef<int64_t> shape = weight.getShape();
  double macs = 1;
  for (int64_t dim : shape)
    macs *= static_cast<double>(dim);
  return macs;
}

/// The GEMM rows hgraph-to-htmpl runs for `typed_linear W, x from F` (with
/// `compact` its own materialization): once per node where the weight does
/// not depend on the edge type, else once per edge or per unique pair.
Symbol gemmRows(Endpoint from, WeightType weight, Value input, bool compact) {
  switch (from) {
  case Endpoint::Node:
    return N;
  case Endpoint::Src:
  case Endpoint::Dst:
    if (weight.getIndex() != WeightIndex::EdgeType)
      return N;
    return compact ? P : E;
  case Endpoint::Edge:
    return rowsOf(input);
  }
  return E;
}

Cost typedLinearCost(Endpoint from, WeightType weight, Value input,
                     bool compact) {
  return Cost::of(gemmRows(from, weight, input, compact), sliceMacs(weight));
}

Cost typedLinearCost(TypedLinearOp op) {
  return typedLinearCost(op.getFrom(), cast<WeightType>(op.getWeight().getType()),
                         op.getInput(), isMarkedCompact(op));
}

/// One multiply-add per element of a row-wise product (dot, scale).
Cost rowWiseCost(Value result, int64_t width) {
  return Cost::of(rowsOf(result), static_cast<double>(width));
}

std::optional<Symbol> typeCount(WeightIndex index) {
  switch (index) {
  case WeightIndex::EdgeType:
    return R;
  case WeightIndex::NodeType:
    return T;
  case WeightIndex::Single:
    return std::nullopt;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Weight products
//===----------------------------------------------------------------------===//

/// A weight slice as the matrix it stands for (vectors as a row on the left,
/// a column on the right; per-head slices block-diagonal).
struct Dense {
  int64_t rows, cols;
};
Dense asDense(WeightType type, bool isLeft) {
  if (type.isVector())
    return isLeft ? Dense{1, type.getShape()[0]} : Dense{type.getShape()[0], 1};
  return {type.getInputWidth(), type.getOutputWidth()};
}

/// The slice shape of `lhs · rhs` (the rules of hgraph.weight_product; with
/// `heads` > 0, a matrix times a vector cut into that many head blocks), or
/// nothing when they do not chain.
std::optional<SmallVector<int64_t>> productShape(WeightType lhs,
                                                 WeightType rhs,
                                                 int64_t heads) {
  if (heads) {
    if (!lhs.isMatrix() || !rhs.isVector() ||
        lhs.getShape()[1] != rhs.getShape()[0] ||
        rhs.getShape()[0] % heads != 0)
      return std::nullopt;
    return SmallVector<int64_t>{lhs.getShape()[0], heads};
  }
  if (lhs.isVector() && rhs.isVector())
    return std::nullopt;
  if (lhs.isPerHead() && rhs.isPerHead()) {
    ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
    if (a[0] != b[0] || a[2] != b[1])
      return std::nullopt;
    return SmallVector<int64_t>{a[0], a[1], b[2]};
  }
  Dense a = asDense(lhs, true), b = asDense(rhs, false);
  if (a.cols != b.rows)
    return std::nullopt;
  if (lhs.isVector())
    return SmallVector<int64_t>{b.cols};
  if (rhs.isVector())
    return SmallVector<int64_t>{a.rows};
  return SmallVector<int64_t>{a.rows, b.cols};
}

/// Multiply-adds of one slice of `lhs · rhs`: each result element sums over
/// the inner dimension, restricted to one head block when a factor is
/// per-head (the other blocks are zeros) or the vector is cut into `heads`.
double productMacs(WeightType lhs, WeightType rhs, ArrayRef<int64_t> shape,
                   int64_t heads) {
  double inner = lhs.isPerHead()   ? static_cast<double>(lhs.getShape()[2])
                 : rhs.isPerHead() ? static_cast<double>(rhs.getShape()[1])
                                   : static_cast<double>(
                                         asDense(lhs, true).cols);
  if (heads)
    inner /= static_cast<double>(heads);
  double elements = 1;
  for (int64_t dim : shape)
    elements *= static_cast<double>(dim);
  return elements * inner;
}

/// What selects the slice of `lhs · rhs` where both factors are applied to
/// the same row: `nodeOf` is the endpoint whose node type selects a
/// node-typed factor on an edge. Nothing when no single kind does.
struct ProductIndex {
  WeightIndex index;
  std::optional<Endpoint> nodeOf;
};
std::optional<ProductIndex> productIndex(WeightIndex lhs, WeightIndex rhs,
                                         Endpoint nodeEndpoint,
                                         bool typedEndpoints) {
  if (lhs == WeightIndex::Single)
    return ProductIndex{rhs, std::nullopt};
  if (rhs == WeightIndex::Single || lhs == rhs)
    return ProductIndex{lhs, std::nullopt};
  // One node-typed and one edge-typed factor: an edge-typed product when
  // every edge type has fixed endpoint node types (else the slice would
  // depend on the pair (node type, edge type)).
  if (!typedEndpoints ||
      (nodeEndpoint != Endpoint::Src && nodeEndpoint != Endpoint::Dst))
    return std::nullopt;
  return ProductIndex{WeightIndex::EdgeType, nodeEndpoint};
}

/// A weight product to create: its type, its cost, and how to build it.
struct Product {
  WeightType type;
  std::optional<Endpoint> nodeOf;
  Cost cost;
  /// The head count of a product whose vector is cut into head blocks
  /// (weight_product `heads`), else 0.
  int64_t heads = 0;
};
/// What the rules may assume about the graph.
struct Assumptions {
  bool typedEndpoints = false;
  /// Only products autodiff has a rule for (before autodiff).
  bool differentiable = false;
};

/// `lhs · rhs`, or with `heads` > 0 a matrix times a vector cut into that
/// many head blocks: the [m, H] matrix whose column h maps a row to the dot
/// of its image with block h.
std::optional<Product> planProduct(WeightType lhs, WeightType rhs,
                                   Endpoint nodeEndpoint,
                                   const Assumptions &assume,
                                   int64_t heads = 0) {
  if (lhs.getElementType() != rhs.getElementType())
    return std::nullopt;
  if (assume.differentiable &&
      (lhs.getIndex() != rhs.getIndex() || lhs.isVector() == rhs.isVector()))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> shape = productShape(lhs, rhs, heads);
  std::optional<ProductIndex> index =
      productIndex(lhs.getIndex(), rhs.getIndex(), nodeEndpoint,
                   assume.typedEndpoints);
  if (!shape || !index)
    return std::nullopt;
  auto type = WeightType::get(lhs.getContext(), index->index, *shape,
                              lhs.getElementType());
  return Product{type, index->nodeOf,
                 Cost::of(typeCount(index->index),
                          productMacs(lhs, rhs, *shape, heads)),
                 heads};
}

Value buildProduct(OpBuilder &b, Location loc, const Product &product,
                   Value lhs, Value rhs) {
  EndpointAttr nodeOf;
  if (product.nodeOf)
    nodeOf = EndpointAttr::get(b.getContext(), *product.nodeOf);
  IntegerAttr heads;
  if (product.heads)
    heads = b.getI64IntegerAttr(product.heads);
  return WeightProductOp::create(b, loc, product.type, lhs, rhs, nodeOf,
                                 heads);
}

//===----------------------------------------------------------------------===//
// Rewrites
//===----------------------------------------------------------------------===//

/// The rows of node-wise `x` read where `from` says: at an edge endpoint
/// (a gather), or as they are.
Value readAt(OpBuilder &b, Location loc, Value x, Endpoint from) {
  if (from != Endpoint::Src && from != Endpoint::Dst)
    return x;
  auto type = cast<FeatureType>(x.getType());
  auto edgeType = EdgeValueType::get(b.getContext(), type.getWidth(),
                                     type.getElementType(), type.getHeads());
  return GatherOp::create(b, loc, edgeType, x, from);
}

/// The typed vector `weight` as a value of `type`, read for every row; a
/// node-typed vector on edges is read at the endpoint `from`.
Value broadcast(OpBuilder &b, Location loc, Value weight, FeatureType type,
                Endpoint from) {
  auto weightType = cast<WeightType>(weight.getType());
  if (!type.isEdgeWise() || weightType.getIndex() != WeightIndex::NodeType)
    return TypedVectorOp::create(b, loc, type, weight);
  auto nodeType = NodeValueType::get(b.getContext(), type.getWidth(),
                                     type.getElementType(), type.getHeads());
  Value perNode = TypedVectorOp::create(b, loc, nodeType, weight);
  return GatherOp::create(b, loc, type, perNode, from);
}

/// A legal rewrite of one operator, with its costs before and after.
struct Candidate {
  StringRef rule;
  Cost before, after;
  /// Builds the replacement of the anchor operator.
  std::function<Value(OpBuilder &)> build;
};

/// The cost of `value`'s producer when `user` is its only user: the rewrite
/// of `user` makes it dead.
Cost freedBy(Value value, Operation *user, Cost producerCost) {
  if (llvm::all_of(value.getUsers(),
                   [&](Operation *other) { return other == user; }))
    return producerCost;
  return Cost();
}

/// The typed linear map and the typed vector `dot` multiplies, the map
/// taken from operand `side`; nulls when the operands are not that pair.
std::pair<TypedLinearOp, TypedVectorOp> mapAndVector(DotOp dot, unsigned side) {
  return {dot->getOperand(side).getDefiningOp<TypedLinearOp>(),
          dot->getOperand(1 - side).getDefiningOp<TypedVectorOp>()};
}

/// What rewriting `dot` of the rows of `linear` saves: the dot, and the map
/// when the dot is its only user.
Cost dotAndFreedMap(DotOp dot, TypedLinearOp linear) {
  Cost cost = rowWiseCost(dot.getResult(),
                          cast<FeatureType>(linear.getType()).getWidth());
  cost += freedBy(linear, dot, typedLinearCost(linear));
  return cost;
}

/// Per-head dot(x·W, a) with a full matrix W and one-head rows x ->
/// x·(W·a heads H): head h of the dot reads every feature of x, so the
/// product is the [in, H] matrix of hgraph.weight_product `heads`, applied
/// by a typed linear map with H outputs.
std::optional<Candidate> matchHeadDot(DotOp dot, const Assumptions &assume) {
  for (unsigned side = 0; side < 2; ++side) {
    auto [linear, vector] = mapAndVector(dot, side);
    if (!linear || !vector || linear.getTranspose())
      continue;
    auto weight = cast<WeightType>(linear.getWeight().getType());
    auto attention = cast<WeightType>(vector.getWeight().getType());
    auto mapped = cast<FeatureType>(linear.getType());
    auto input = cast<FeatureType>(linear.getInput().getType());
    int64_t heads = mapped.getHeads();
    if (heads == 1 || input.getHeads() != 1 || !weight.isMatrix())
      continue;
    Endpoint from = linear.getFrom();
    std::optional<Product> product =
        planProduct(weight, attention, from, assume, heads);
    if (!product)
      continue;

    Candidate candidate;
    candidate.rule = "per-head dot of a typed linear map with a typed vector";
    candidate.before = dotAndFreedMap(dot, linear);
    candidate.after = product->cost;
    candidate.after += typedLinearCost(from, product->type,
                                       linear.getInput(), /*compact=*/false);
    Value x = linear.getInput(), w = linear.getWeight(),
          a = vector.getWeight();
    Location loc = dot.getLoc();
    Type resultType = dot.getType();
    candidate.build = [=](OpBuilder &b) -> Value {
      Value p = buildProduct(b, loc, *product, w, a);
      return TypedLinearOp::create(b, loc, resultType, p, x, from);
    };
    return candidate;
  }
  return std::nullopt;
}

/// dot(x·W, a) -> dot(x, W·a), and dot(x·Wᵀ, a) -> dot(x, a·W).
std::optional<Candidate> matchDot(DotOp dot, const Assumptions &assume) {
  for (unsigned side = 0; side < 2; ++side) {
    auto [linear, vector] = mapAndVector(dot, side);
    if (!linear || !vector)
      continue;
    auto weight = cast<WeightType>(linear.getWeight().getType());
    auto attention = cast<WeightType>(vector.getWeight().getType());
    auto mapped = cast<FeatureType>(linear.getType());
    auto input = cast<FeatureType>(linear.getInput().getType());
    // Head k of the dot must read head k of x only: a per-head weight, or a
    // single head. The new dot keeps the old result type.
    if ((!weight.isPerHead() && mapped.getHeads() != 1) ||
        input.getHeads() != mapped.getHeads())
      continue;
    bool transpose = linear.getTranspose();
    Endpoint from = linear.getFrom();
    std::optional<Product> product =
        transpose ? planProduct(attention, weight, from, assume)
                  : planProduct(weight, attention, from, assume);
    if (!product)
      continue;

    Candidate candidate;
    candidate.rule = "dot of a typed linear map with a typed vector";
    candidate.before = dotAndFreedMap(dot, linear);
    candidate.after = product->cost;
    candidate.after += rowWiseCost(dot.getResult(), input.getWidth());
    Value x = linear.getInput(), w = linear.getWeight(),
          a = vector.getWeight();
    Location loc = dot.getLoc();
    Type resultType = dot.getType();
    candidate.build = [=](OpBuilder &b) -> Value {
      Value p = transpose ? buildProduct(b, loc, *product, a, w)
                          : buildProduct(b, loc, *product, w, a);
      Value rows = readAt(b, loc, x, from);
      Value perRow =
          broadcast(b, loc, p, cast<FeatureType>(rows.getType()), from);
      return DotOp::create(b, loc, resultType, rows, perRow);
    };
    return candidate;
  }
  return std::nullopt;
}

/// (x·W1)·W2 -> x·(W1·W2).
std::optional<Candidate> matchChain(TypedLinearOp outer,
                                    const Assumptions &assume) {
  auto inner = outer.getInput().getDefiningOp<TypedLinearOp>();
  if (!inner || inner.getTranspose() || outer.getTranspose())
    return std::nullopt;
  // The combined map reads x where the first map did, unless that was per
  // node and the second reads the node rows at an endpoint.
  Endpoint from = outer.getFrom() == Endpoint::Edge ? inner.getFrom()
                                                    : outer.getFrom();
  auto first = cast<WeightType>(inner.getWeight().getType());
  auto second = cast<WeightType>(outer.getWeight().getType());
  std::optional<Product> product = planProduct(first, second, from, assume);
  if (!product)
    return std::nullopt;
  // The combined weight must be applicable from there: an edge-typed one
  // not per node, a node-typed one not on edges.
  WeightIndex index = product->type.getIndex();
  if ((index == WeightIndex::EdgeType && from == Endpoint::Node) ||
      (index == WeightIndex::NodeType && from == Endpoint::Edge))
    return std::nullopt;

  // A result stored once per (source, type) pair stays so: the combined map
  // depends on no more than the chain did.
  Value x = inner.getInput(), w1 = inner.getWeight(), w2 = outer.getWeight();
  bool compact =
      gemmRows(outer.getFrom(), second, outer.getInput(), isMarkedCompact(outer)) ==
          P &&
      from == Endpoint::Src && index == WeightIndex::EdgeType;

  Candidate candidate;
  candidate.rule = "two chained typed linear maps";
  candidate.before = typedLinearCost(outer);
  candidate.before += freedBy(inner, outer, typedLinearCost(inner));
  candidate.after = product->cost;
  candidate.after += typedLinearCost(from, product->type, x, compact);
  Location loc = outer.getLoc();
  Type resultType = outer.getType();
  candidate.build = [=](OpBuilder &b) -> Value {
    Value p = buildProduct(b, loc, *product, w1, w2);
    auto combined = TypedLinearOp::create(b, loc, resultType, p, x, from);
    if (compact)
      combined->setAttr(
          HGraphDialect::getMaterializationAttrName(),
          MaterializationAttr::get(b.getContext(), Materialization::Compact));
    return combined;
  };
  return candidate;
}

/// (s·a)·W -> s·(a·W), and (s·a)·Wᵀ -> s·(W·a), for rows on one domain
/// (`from edge` or `from node`).
std::optional<Candidate> matchScaledVector(TypedLinearOp linear,
                                           const Assumptions &assume) {
  Endpoint from = linear.getFrom();
  if (from != Endpoint::Edge && from != Endpoint::Node)
    return std::nullopt;
  auto scaled = linear.getInput().getDefiningOp<ScaleOp>();
  if (!scaled)
    return std::nullopt;
  auto vector = scaled.getInput().getDefiningOp<TypedVectorOp>();
  if (!vector)
    return std::nullopt;
  auto weight = cast<WeightType>(linear.getWeight().getType());
  auto attention = cast<WeightType>(vector.getWeight().getType());
  auto scaleType = cast<FeatureType>(scaled.getScale().getType());
  auto input = cast<FeatureType>(scaled.getType());
  auto result = cast<FeatureType>(linear.getType());
  // Exact when one scalar scales the whole row, or head k of the result
  // reads head k of the input only.
  if (scaleType.getWidth() != 1 && !weight.isPerHead() &&
      input.getHeads() != 1)
    return std::nullopt;
  if (scaleType.getWidth() != 1 && result.getHeads() != scaleType.getWidth())
    return std::nullopt;
  bool transpose = linear.getTranspose();
  std::optional<Product> product =
      transpose ? planProduct(weight, attention, from, assume)
                : planProduct(attention, weight, from, assume);
  if (!product)
    return std::nullopt;

  Candidate candidate;
  candidate.rule = "typed linear map of a scaled typed vector";
  candidate.before = typedLinearCost(linear);
  candidate.before += freedBy(scaled, linear,
                              rowWiseCost(scaled.getResult(), input.getWidth()));
  candidate.after = product->cost;
  candidate.after += rowWiseCost(linear.getResult(), result.getWidth());
  Value s = scaled.getScale(), w = linear.getWeight(), a = vector.getWeight();
  Location loc = linear.getLoc();
  candidate.build = [=](OpBuilder &b) -> Value {
    Value p = transpose ? buildProduct(b, loc, *product, w, a)
                        : buildProduct(b, loc, *product, a, w);
    Value perRow = TypedVectorOp::create(b, loc, result, p);
    return ScaleOp::create(b, loc, result, s, perRow);
  };
  return candidate;
}

std::optional<Candidate> match(Operation *op, const Assumptions &assume) {
  if (auto dot = dyn_cast<DotOp>(op)) {
    if (std::optional<Candidate> candidate = matchDot(dot, assume))
      return candidate;
    return matchHeadDot(dot, assume);
  }
  if (auto linear = dyn_cast<TypedLinearOp>(op)) {
    if (std::optional<Candidate> chain = matchChain(linear, assume))
      return chain;
    return matchScaledVector(linear, assume);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

struct LinearReorderingPass
    : public hector::impl::LinearReorderingBase<LinearReorderingPass> {
  using LinearReorderingBase::LinearReorderingBase;

  void runOnOperation() override {
    std::optional<Sizes> sizes = graphSizes();
    if (!sizes)
      return signalPassFailure();
    for (FuncOp func : getOperation().getOps<FuncOp>())
      run(func, *sizes);
  }

private:
  /// The sizes costs are evaluated at: the options, defaults where unset.
  std::optional<Sizes> graphSizes() {
    return resolve(getOperation(), "hgraph-linear-reordering", numNodes,
                   numEdges, numPairs, numEdgeTypes, numNodeTypes);
  }

  bool profitable(const Candidate &candidate, const Sizes &sizes) {
    return ignoreCost || candidate.after.at(sizes) < candidate.before.at(sizes);
  }

  void remark(Operation *op, const Candidate &candidate, bool rewritten) {
    if (!remarks)
      return;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "linear reordering (" << candidate.rule << "): multiply-adds ";
    candidate.before.print(os);
    os << " before, ";
    candidate.after.print(os);
    os << " after: " << (rewritten ? "rewritten" : "kept");
    op->emitRemark(text);
  }

  void run(FuncOp func, const Sizes &sizes) {
    Block &body = func.getBody().front();
    Assumptions assume;
    assume.typedEndpoints = typedEndpoints;
    assume.differentiable = differentiable;
    IRRewriter rewriter(func.getContext());
    // Rewrites enable others (a combined map may feed a dot), and make
    // producers dead, which makes other candidates cheaper: repeat until
    // nothing changes. Every rewrite removes a linear operator on graph
    // rows, so this ends.
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(body)) {
        std::optional<Candidate> candidate = match(&op, assume);
        if (!candidate || !profitable(*candidate, sizes))
          continue;
        remark(&op, *candidate, /*rewritten=*/true);
        rewriter.setInsertionPoint(&op);
        Value replacement = candidate->build(rewriter);
        SmallVector<Operation *> operands;
        for (Value operand : op.getOperands())
          if (Operation *def = operand.getDefiningOp())
            operands.push_back(def);
        rewriter.replaceOp(&op, replacement);
        eraseIfDead(rewriter, operands);
        changed = true;
      }
    }
    if (remarks)
      for (Operation &op : body)
        if (std::optional<Candidate> candidate = match(&op, assume))
          remark(&op, *candidate, /*rewritten=*/false);
  }

  /// Erases the operators that a rewrite left without users, and then
  /// theirs.
  static void eraseIfDead(IRRewriter &rewriter, ArrayRef<Operation *> ops) {
    llvm::SetVector<Operation *> worklist(ops.begin(), ops.end());
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!op->use_empty() || !isPure(op) ||
          op->getName().getDialectNamespace() !=
              HGraphDialect::getDialectNamespace())
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          worklist.insert(def);
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
