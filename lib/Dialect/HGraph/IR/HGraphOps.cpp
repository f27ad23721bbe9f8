//===- HGraphOps.cpp - hgraph operations ------------------------*- C++ -*-===//

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"

#include <cmath>

using namespace mlir;
using namespace hector::hgraph;

#define GET_OP_CLASSES
#include "hector/Dialect/HGraph/IR/HGraphOps.cpp.inc"

namespace {
/// Words used in diagnostics: "node-wise" / "edge-wise".
StringRef domainName(FeatureType type) {
  return type.isEdgeWise() ? "edge-wise" : "node-wise";
}

/// Checks that `result` rows have the shape of `input` rows (width, heads,
/// element type), for ops that move rows between domains unchanged.
LogicalResult verifySameRowShape(Operation *op, Value input, Value result) {
  auto in = cast<FeatureType>(input.getType());
  auto out = cast<FeatureType>(result.getType());
  if (in.getWidth() == out.getWidth() && in.getHeads() == out.getHeads() &&
      in.getElementType() == out.getElementType())
    return success();
  return op->emitOpError("result ")
         << result.getType()
         << " must have the width, heads and element type of the input "
         << input.getType();
}
} // namespace

//===----------------------------------------------------------------------===//
// FuncOp
//===----------------------------------------------------------------------===//

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void FuncOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(
      printer, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

BlockArgument FuncOp::getGraph() {
  for (BlockArgument arg : getBody().getArguments())
    if (isa<GraphType>(arg.getType()))
      return arg;
  return {};
}

std::string FuncOp::getArgumentName(unsigned index) {
  if (auto name = getArgAttrOfType<StringAttr>(index, "hgraph.name"))
    return name.str();
  return ("arg" + Twine(index)).str();
}

LogicalResult FuncOp::verify() {
  if (getBody().empty())
    return emitOpError("must have a body: hgraph has no external functions");
  unsigned numGraphs = 0;
  for (auto [index, type] : llvm::enumerate(getArgumentTypes())) {
    if (isa<GraphType>(type)) {
      ++numGraphs;
      continue;
    }
    if (!isa<FeatureType, WeightType, StoredType, SeedType>(type))
      return emitOpError("argument #")
             << index << " has type " << type
             << "; arguments are the graph, node-wise or edge-wise values "
                "(possibly stored), weights, and seeds";
  }
  if (numGraphs != 1)
    return emitOpError("takes exactly one !hgraph.graph argument, got ")
           << numGraphs;
  for (auto [index, type] : llvm::enumerate(getResultTypes()))
    if (!isa<FeatureType, WeightType, StoredType>(type))
      return emitOpError("result #")
             << index << " has type " << type
             << "; results are node-wise or edge-wise values (possibly "
                "stored), or weights";
  return success();
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

LogicalResult ReturnOp::verify() {
  auto func = cast<FuncOp>((*this)->getParentOp());
  ArrayRef<Type> results = func.getResultTypes();
  if (getNumOperands() != results.size())
    return emitOpError("returns ")
           << getNumOperands() << " values but the function declares "
           << results.size() << " results";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getOperandTypes(), results)))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError("operand #")
             << index << " has type " << std::get<0>(pair)
             << " but the function result has type " << std::get<1>(pair);
  return success();
}

//===----------------------------------------------------------------------===//
// TypedLinearOp
//===----------------------------------------------------------------------===//

namespace {
/// The typing rules shared by `typed_linear` and its weight gradient: `input`
/// rows are read `from` an endpoint and mapped by `weight` (transposed or
/// not) into rows of `output`'s type.
LogicalResult verifyTypedLinear(Operation *op, WeightType weight,
                                Value inputValue, Value outputValue,
                                Endpoint from, bool transpose,
                                StringRef inputName, StringRef outputName) {
  auto input = cast<FeatureType>(inputValue.getType());
  auto output = cast<FeatureType>(outputValue.getType());
  StringRef fromName = stringifyEndpoint(from);

  // Where the rows come from fixes the domains of input and output.
  bool wantEdgeInput = from == Endpoint::Edge;
  bool wantEdgeOutput = from != Endpoint::Node;
  if (input.isEdgeWise() != wantEdgeInput)
    return op->emitOpError("'from ")
           << fromName << "' needs "
           << (wantEdgeInput ? "an edge-wise" : "a node-wise") << " "
           << inputName << ", got " << domainName(input) << " "
           << inputValue.getType();
  if (output.isEdgeWise() != wantEdgeOutput)
    return op->emitOpError("'from ")
           << fromName << "' maps rows to "
           << (wantEdgeOutput ? "an edge-wise" : "a node-wise") << " "
           << outputName << ", got " << domainName(output) << " "
           << outputValue.getType();

  // Which rows have a type that can select the weight slice.
  if (weight.getIndex() == WeightIndex::EdgeType && from == Endpoint::Node)
    return op->emitOpError("an edge-typed weight cannot be applied to node "
                           "rows ('from node'): a node has no edge type");
  if (weight.getIndex() == WeightIndex::NodeType && from == Endpoint::Edge)
    return op->emitOpError(
        "a node-typed weight cannot be applied to an edge-wise value: use "
        "'from src' or 'from dst' to say whose node type selects the weight");

  if (weight.isVector())
    return op->emitOpError("needs a matrix [in, out] or per-head "
                           "[H, in/H, out/H] weight, got the vector weight ")
           << weight << "; use hgraph.typed_vector with hgraph.dot or "
           << "hgraph.mul";
  if (weight.getElementType() != input.getElementType() ||
      weight.getElementType() != output.getElementType())
    return op->emitOpError("weight, ") << inputName << " and " << outputName
                                       << " must have one element type";

  int64_t inWidth =
      transpose ? weight.getOutputWidth() : weight.getInputWidth();
  int64_t outWidth =
      transpose ? weight.getInputWidth() : weight.getOutputWidth();
  StringRef inSide = transpose ? "output" : "input";
  StringRef outSide = transpose ? "input" : "output";
  if (input.getWidth() != inWidth)
    return op->emitOpError()
           << inputName << " width " << input.getWidth()
           << " does not match the weight's " << inSide << " width " << inWidth;
  if (output.getWidth() != outWidth)
    return op->emitOpError() << outputName << " width " << output.getWidth()
                             << " does not match the weight's " << outSide
                             << " width " << outWidth;
  if (weight.isPerHead()) {
    int64_t heads = weight.getShape()[0];
    if (input.getHeads() != heads || output.getHeads() != heads)
      return op->emitOpError("a per-head weight with ")
             << heads << " heads needs " << inputName << " and " << outputName
             << " with " << heads << " heads, got " << input.getHeads()
             << " and " << output.getHeads();
  }
  return success();
}
} // namespace

LogicalResult TypedLinearOp::verify() {
  return verifyTypedLinear(*this, cast<WeightType>(getWeight().getType()),
                           getInput(), getResult(), getFrom(), getTranspose(),
                           "input", "result");
}

//===----------------------------------------------------------------------===//
// WeightGradOp
//===----------------------------------------------------------------------===//

LogicalResult WeightGradOp::verify() {
  return verifyTypedLinear(*this, cast<WeightType>(getResult().getType()),
                           getInput(), getGrad(), getFrom(),
                           /*transpose=*/false, "input", "gradient");
}

//===----------------------------------------------------------------------===//
// TypedVectorOp
//===----------------------------------------------------------------------===//

namespace {
/// The typing rules shared by `typed_vector` and its gradient `type_sum`:
/// `rows` has one row per edge or node, each the length of the vector slice.
LogicalResult verifyTypedVector(Operation *op, WeightType weight, Value rows) {
  auto type = cast<FeatureType>(rows.getType());
  if (!weight.isVector())
    return op->emitOpError("needs a vector weight [n], got ") << weight;
  if (weight.getIndex() == WeightIndex::EdgeType && !type.isEdgeWise())
    return op->emitOpError("an edge-typed weight pairs with an edge-wise "
                           "value, got ")
           << rows.getType();
  if (weight.getIndex() == WeightIndex::NodeType && type.isEdgeWise())
    return op->emitOpError("a node-typed weight pairs with a node-wise "
                           "value, got ")
           << rows.getType();
  if (type.getWidth() != weight.getShape()[0])
    return op->emitOpError("row width ")
           << type.getWidth() << " does not match the weight's length "
           << weight.getShape()[0];
  if (type.getElementType() != weight.getElementType())
    return op->emitOpError("weight and rows must have one element type");
  return success();
}
} // namespace

LogicalResult TypedVectorOp::verify() {
  return verifyTypedVector(*this, cast<WeightType>(getWeight().getType()),
                           getResult());
}

LogicalResult TypeSumOp::verify() {
  return verifyTypedVector(*this, cast<WeightType>(getResult().getType()),
                           getInput());
}

//===----------------------------------------------------------------------===//
// WeightProductOp
//===----------------------------------------------------------------------===//

namespace {
/// A weight slice seen as a matrix (vectors as a row or a column).
struct SliceShape {
  int64_t rows, cols;
};
SliceShape asMatrix(WeightType type, bool isLeft) {
  ArrayRef<int64_t> shape = type.getShape();
  if (type.isVector())
    return isLeft ? SliceShape{1, shape[0]} : SliceShape{shape[0], 1};
  return {type.getInputWidth(), type.getOutputWidth()};
}
} // namespace

LogicalResult WeightProductOp::verify() {
  auto lhs = cast<WeightType>(getLhs().getType());
  auto rhs = cast<WeightType>(getRhs().getType());
  auto result = cast<WeightType>(getResult().getType());
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != result.getElementType())
    return emitOpError("operands and result must have one element type");

  // Index kinds.
  WeightIndex li = lhs.getIndex(), ri = rhs.getIndex();
  bool mixed = (li == WeightIndex::NodeType && ri == WeightIndex::EdgeType) ||
               (li == WeightIndex::EdgeType && ri == WeightIndex::NodeType);
  WeightIndex expectedIndex = li == WeightIndex::Single ? ri
                              : mixed                   ? WeightIndex::EdgeType
                                                        : li;
  std::optional<Endpoint> nodeOf = getNodeOf();
  if (mixed &&
      (!nodeOf || (*nodeOf != Endpoint::Src && *nodeOf != Endpoint::Dst)))
    return emitOpError("a product of a node-typed and an edge-typed weight "
                       "needs 'node_of src' or 'node_of dst'");
  if (!mixed && nodeOf)
    return emitOpError("'node_of' is only meaningful for a product of a "
                       "node-typed and an edge-typed weight");
  if (result.getIndex() != expectedIndex)
    return emitOpError("result must be indexed by '")
           << stringifyWeightIndex(expectedIndex) << "', got '"
           << stringifyWeightIndex(result.getIndex()) << "'";

  // Shapes.
  if (lhs.isVector() && rhs.isVector())
    return emitOpError("the product of two vectors is a dot product, not a "
                       "weight; use hgraph.dot on rows");
  SmallVector<int64_t> expected;
  if (std::optional<uint64_t> heads = getHeads()) {
    // The vector (or, for its gradient, the right matrix) is cut into head
    // blocks, each meeting one column of the left matrix.
    int64_t h = static_cast<int64_t>(*heads);
    if (!lhs.isMatrix() || rhs.isPerHead())
      return emitOpError("with 'heads', multiplies a matrix by a vector or "
                         "an [m, heads] matrix by an [m, n] matrix");
    ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
    int64_t blocked = rhs.isVector() ? b[0] : b[1];
    if (blocked % h != 0)
      return emitOpError("width ") << blocked << " does not split into " << h
                                   << " heads";
    if (rhs.isVector()) {
      if (a[1] != b[0])
        return emitOpError("inner dimensions do not match: ")
               << a[1] << " vs " << b[0];
      expected = {a[0], h};
    } else {
      if (a[1] != h || a[0] != b[0])
        return emitOpError("with 'heads ")
               << h << "' and two matrices, the left one must be [" << b[0]
               << ", " << h << "], got " << getLhs().getType();
      expected = {b[1]};
    }
  } else if (lhs.isPerHead() && rhs.isPerHead()) {
    ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
    if (a[0] != b[0] || a[2] != b[1])
      return emitOpError("per-head shapes ")
             << getLhs().getType() << " and " << getRhs().getType()
             << " do not chain";
    expected = {a[0], a[1], b[2]};
  } else {
    SliceShape a = asMatrix(lhs, /*isLeft=*/true);
    SliceShape b = asMatrix(rhs, /*isLeft=*/false);
    if (a.cols != b.rows)
      return emitOpError("inner dimensions do not match: ")
             << a.cols << " vs " << b.rows;
    if (lhs.isVector())
      expected = {b.cols};
    else if (rhs.isVector())
      expected = {a.rows};
    else
      expected = {a.rows, b.cols};
  }
  if (ArrayRef<int64_t>(expected) != result.getShape()) {
    InFlightDiagnostic diag = emitOpError("result slice shape must be [");
    llvm::interleaveComma(expected, diag);
    return diag << "], got " << getResult().getType();
  }
  return success();
}

LogicalResult WeightOuterOp::verify() {
  auto lhs = cast<WeightType>(getLhs().getType());
  auto rhs = cast<WeightType>(getRhs().getType());
  auto result = cast<WeightType>(getResult().getType());
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != result.getElementType())
    return emitOpError("operands and result must have one element type");
  if (lhs.getIndex() != rhs.getIndex() || lhs.getIndex() != result.getIndex())
    return emitOpError("operands and result must be indexed alike");
  if (std::optional<uint64_t> heads = getHeads()) {
    // u[m, H] and v[n] cut into H head blocks give the matrix [m, n].
    int64_t h = static_cast<int64_t>(*heads);
    if (!lhs.isMatrix() || lhs.getShape()[1] != h || !rhs.isVector() ||
        !result.isMatrix())
      return emitOpError("with 'heads ")
             << h << "', multiplies an [m, " << h
             << "] matrix by a vector into a matrix";
    int64_t n = rhs.getShape()[0];
    if (n % h != 0)
      return emitOpError("width ") << n << " does not split into " << h
                                   << " heads";
    if (result.getShape() != ArrayRef<int64_t>{lhs.getShape()[0], n})
      return emitOpError("result must be [")
             << lhs.getShape()[0] << ", " << n << "], got "
             << getResult().getType();
    return success();
  }
  if (!lhs.isVector() || !rhs.isVector())
    return emitOpError("multiplies two weight vectors");
  if (result.isVector())
    return emitOpError("result must be a matrix or a per-head matrix");
  // The dense [rows, cols] of the result (a per-head one block-diagonal).
  if (lhs.getShape()[0] != result.getInputWidth() ||
      rhs.getShape()[0] != result.getOutputWidth())
    return emitOpError("result ")
           << getResult().getType() << " is not the outer product of "
           << getLhs().getType() << " and " << getRhs().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Graph access
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() {
  if (getFrom() != Endpoint::Src && getFrom() != Endpoint::Dst)
    return emitOpError("reads at 'src' or 'dst', got '")
           << stringifyEndpoint(getFrom()) << "'";
  return verifySameRowShape(*this, getInput(), getResult());
}

LogicalResult RelationNormOp::verify() {
  auto result = cast<FeatureType>(getResult().getType());
  if (result.getWidth() != 1)
    return emitOpError("produces one scalar per edge (width 1), got width ")
           << result.getWidth();
  return success();
}

LogicalResult DegreeNormOp::verify() {
  auto result = cast<FeatureType>(getResult().getType());
  if (result.getWidth() != 1)
    return emitOpError("produces one scalar per edge (width 1), got width ")
           << result.getWidth();
  return success();
}

LogicalResult AggregateOp::verify() {
  auto input = cast<FeatureType>(getInput().getType());
  auto result = cast<FeatureType>(getResult().getType());
  if (!input.isEdgeWise())
    return emitOpError("reduces the incoming edges of each node; its input "
                       "must be edge-wise, got node-wise ")
           << getInput().getType();
  if (result.isEdgeWise())
    return emitOpError("produces a node-wise value, got ")
           << getResult().getType();
  if (Endpoint to = getReceiver(); to != Endpoint::Src && to != Endpoint::Dst)
    return emitOpError("reduces into the 'src' or 'dst' node of each edge, "
                       "got '")
           << stringifyEndpoint(to) << "'";
  if (getReceiver() == Endpoint::Src && getKind() != Reduction::Sum)
    return emitOpError("'to src' supports the 'sum' reduction only, got '")
           << stringifyReduction(getKind()) << "'";
  return verifySameRowShape(*this, getInput(), getResult());
}

LogicalResult EdgeSoftmaxOp::verify() {
  auto input = cast<FeatureType>(getInput().getType());
  if (!input.isEdgeWise())
    return emitOpError(getByType()
                           ? "normalizes over each node's incoming edges of "
                             "one edge type; its input must be edge-wise, got "
                             "node-wise "
                           : "normalizes over the incoming edges of each "
                             "node; its input must be edge-wise, got "
                             "node-wise ")
           << getInput().getType();
  return success();
}

LogicalResult GroupSumOp::verify() {
  auto input = cast<FeatureType>(getInput().getType());
  if (!input.isEdgeWise())
    return emitOpError("sums each edge's (destination, edge type) group; its "
                       "input must be edge-wise, got node-wise ")
           << getInput().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Row-wise math
//===----------------------------------------------------------------------===//

LogicalResult DotOp::verify() {
  auto input = cast<FeatureType>(getLhs().getType());
  auto result = cast<FeatureType>(getResult().getType());
  if (!input.isSameDomain(result))
    return emitOpError("result must be ")
           << domainName(input) << " like the operands, got "
           << getResult().getType();
  if (result.getWidth() != input.getHeads() ||
      result.getHeads() != input.getHeads())
    return emitOpError("produces one value per head: the result must have "
                       "width ")
           << input.getHeads() << " and " << input.getHeads() << " heads, got "
           << getResult().getType();
  if (result.getElementType() != input.getElementType())
    return emitOpError("result element type must match the operands'");
  return success();
}

LogicalResult ScaleOp::verify() {
  auto scale = cast<FeatureType>(getScale().getType());
  auto input = cast<FeatureType>(getInput().getType());
  if (getResult().getType() != getInput().getType())
    return emitOpError("result type must equal the input type ")
           << getInput().getType();
  if (!scale.isSameDomain(input))
    return emitOpError("scale and input must both be node-wise or both "
                       "edge-wise, got ")
           << getScale().getType() << " and " << getInput().getType();
  if (scale.getElementType() != input.getElementType())
    return emitOpError("scale and input must have one element type");
  if (scale.getWidth() != scale.getHeads())
    return emitOpError("scale must hold one scalar per head (width equal to "
                       "its head count), got ")
           << getScale().getType();
  if (scale.getWidth() != 1 && scale.getWidth() != input.getHeads())
    return emitOpError("scale has ")
           << scale.getWidth() << " columns but the input has "
           << input.getHeads() << " heads; use one column per head or one "
           << "column for all";
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("concatenates at least two values, got ")
           << getInputs().size();
  auto result = cast<FeatureType>(getResult().getType());
  int64_t width = 0;
  for (auto [index, value] : llvm::enumerate(getInputs())) {
    auto type = cast<FeatureType>(value.getType());
    if (!type.isSameDomain(result) ||
        type.getElementType() != result.getElementType() ||
        type.getHeads() != result.getHeads())
      return emitOpError("operand #")
             << index << " (" << value.getType()
             << ") must have the domain, element type and heads of the "
                "result "
             << getResult().getType();
    width += type.getWidth();
  }
  if (width != result.getWidth())
    return emitOpError("result width must be the sum of the operand widths, ")
           << width << ", got " << result.getWidth();
  return success();
}

LogicalResult SliceOp::verify() {
  auto input = cast<FeatureType>(getInput().getType());
  auto result = cast<FeatureType>(getResult().getType());
  if (!input.isSameDomain(result) ||
      input.getElementType() != result.getElementType() ||
      input.getHeads() != result.getHeads())
    return emitOpError("result ")
           << getResult().getType()
           << " must have the domain, element type and heads of the input "
           << getInput().getType();
  int64_t offset = getOffset();
  if (offset > input.getHeadWidth() ||
      result.getHeadWidth() > input.getHeadWidth() - offset)
    return emitOpError("columns ")
           << offset << " .. " << offset + result.getHeadWidth() - 1
           << " of each head block are out of range: the input has "
           << input.getHeadWidth() << " per head";
  return success();
}

namespace {
LogicalResult verifySlope(Operation *op, APFloat alpha) {
  if (!std::isfinite(alpha.convertToDouble()))
    return op->emitOpError("negative slope must be finite");
  return success();
}
} // namespace

LogicalResult LeakyReluOp::verify() { return verifySlope(*this, getAlpha()); }

LogicalResult LeakyReluGradOp::verify() {
  return verifySlope(*this, getAlpha());
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p <= 1.0)) // NaN fails both
    return emitOpError("drop probability p must be in [0, 1], got ") << p;
  if (!cast<FeatureType>(getInput().getType()).isEdgeWise())
    return emitOpError("drops elements of edge-wise values (its mask hashes "
                       "the edge index), got ")
           << getInput().getType();
  return success();
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  if (getP().isZero()) // p = 0 keeps every element, scaled by 1
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// EvictOp and PrefetchOp
//===----------------------------------------------------------------------===//

LogicalResult EvictOp::verify() {
  if (getResult().getType().getValueType() != getValue().getType())
    return emitOpError("result ")
           << getResult().getType() << " must store the evicted value's type "
           << getValue().getType();
  // The evicted rows are gone from device memory: every other reader of the
  // value must come first.
  for (Operation *user : getValue().getUsers()) {
    if (user == getOperation())
      continue;
    Operation *reader = (*this)->getBlock()->findAncestorOpInBlock(*user);
    if (!reader || !reader->isBeforeInBlock(*this))
      return emitOpError("evicts a value that is read after it: ")
                 .attachNote(user->getLoc())
             << "read here";
  }
  for (Operation *user : getResult().getUsers())
    if (!isa<ReturnOp>(user))
      return emitOpError("result may only be returned (for the backward to "
                         "prefetch), but is used by ")
             << user->getName();
  return success();
}

LogicalResult PrefetchOp::verify() {
  if (getStored().getType().getValueType() != getResult().getType())
    return emitOpError("result ")
           << getResult().getType() << " must be the stored value's type "
           << getStored().getType().getValueType();
  if (!isa<BlockArgument>(getStored()))
    return emitOpError("prefetches a value evicted in the same function; "
                       "keep it instead");
  for (Operation *user : getStored().getUsers()) {
    if (user == getOperation())
      continue;
    if (isa<PrefetchOp>(user))
      return emitOpError("prefetches a stored value a second time")
                 .attachNote(user->getLoc())
             << "also prefetched here";
    return emitOpError("stored value may only be prefetched, but is also "
                       "used by ")
           << user->getName();
  }
  return success();
}
