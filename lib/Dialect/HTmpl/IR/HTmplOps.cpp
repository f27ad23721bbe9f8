//===- HTmplOps.cpp - htmpl operations --------------------------*- C++ -*-===//

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace hector::htmpl;

#define GET_OP_CLASSES
#include "hector/Dialect/HTmpl/IR/HTmplOps.cpp.inc"

namespace {
/// Static size of dimension `dim` of `type`, or nullopt when dynamic.
std::optional<int64_t> staticDim(MemRefType type, unsigned dim) {
  if (type.isDynamicDim(dim))
    return std::nullopt;
  return type.getDimSize(dim);
}

/// Fails with a diagnostic when two static sizes differ.
LogicalResult checkDim(Operation *op, std::optional<int64_t> actual,
                       int64_t expected, StringRef what) {
  if (actual && *actual != expected)
    return op->emitOpError() << what << " is " << *actual << ", expected "
                             << expected;
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

bool GemmOp::isPerHead() {
  // Weight slices: [K, N] (+ leading T with segments) (+ H after T).
  MemRefType weight =
      cast<MemRefType>(isOuterProduct() ? getOut().getType() : getRhs().getType());
  int64_t base = getSegments() ? 3 : 2;
  return weight.getRank() == base + 1;
}

/// The row-dot epilogue: `row_dot(a [T or 1, N]) into(s [rows, H])`, on a
/// row-mode GEMM whose computed row is what `out` receives (no accumulate,
/// atomic or row scale) and whose weight is not per head; with H > 1 each
/// of the H equal column blocks of a static N gets its own dot.
LogicalResult GemmOp::verifyRowDot(std::optional<int64_t> fullN, Type element) {
  Value vector = getRowDot(), into = getRowDotInto();
  if (!vector && !into)
    return success();
  if (!vector || !into)
    return emitOpError("row_dot and into go together");
  if (isOuterProduct())
    return emitOpError("row_dot is an epilogue of row mode; an outer-product "
                       "(transpose_lhs) GEMM has no output rows to dot");
  if (isPerHead())
    return emitOpError("row_dot sums whole output rows; it takes no per-head "
                       "(block-diagonal) weight");
  if (getAccumulate() || getAtomic() || getRowScale())
    return emitOpError("row_dot dots the computed row alone; it takes no "
                       "accumulate, atomic or row_scale");
  auto vectorType = cast<MemRefType>(vector.getType());
  auto intoType = cast<MemRefType>(into.getType());
  if (vectorType.getElementType() != element ||
      intoType.getElementType() != element)
    return emitOpError("row_dot operands must have the element type ")
           << element;
  if (vectorType.getRank() != 2)
    return emitOpError("row_dot vector must be [types, N], got rank ")
           << vectorType.getRank();
  if (fullN && failed(checkDim(*this, staticDim(vectorType, 1), *fullN,
                               "row_dot vector width")))
    return failure();
  if (!getSegments()) {
    if (std::optional<int64_t> rows = staticDim(vectorType, 0);
        rows && *rows < 1)
      return emitOpError("row_dot vector without segments needs a row");
  }
  if (intoType.getRank() != 2)
    return emitOpError("row_dot result must be [rows, heads], got rank ")
           << intoType.getRank();
  std::optional<int64_t> heads = staticDim(intoType, 1);
  if (!heads || *heads < 1)
    return emitOpError("row_dot result needs a static number of heads "
                       "(columns), at least 1");
  if (*heads > 1 && (!fullN || *fullN % *heads != 0))
    return emitOpError("row_dot over ")
           << *heads << " heads needs a static output width divisible by it";
  return success();
}

LogicalResult GemmOp::verify() {
  auto lhs = cast<MemRefType>(getLhs().getType());
  auto rhs = cast<MemRefType>(getRhs().getType());
  auto out = cast<MemRefType>(getOut().getType());
  Type element = lhs.getElementType();
  if (!isa<FloatType>(element))
    return emitOpError("operates on floats, got element type ") << element;
  if (rhs.getElementType() != element || out.getElementType() != element)
    return emitOpError("lhs, rhs and out must have one element type");
  if (lhs.getRank() != 2)
    return emitOpError("lhs must be a row matrix [rows, K], got rank ")
           << lhs.getRank();

  // Schedule knobs.
  ArrayRef<int64_t> tile = getTile();
  if (tile.size() != 3 || llvm::any_of(tile, [](int64_t t) { return t <= 0; }))
    return emitOpError("tile must be three positive sizes [m, n, k]");
  if (getCoarsen() < 1)
    return emitOpError("coarsening factor must be at least 1, got ")
           << getCoarsen();
  int64_t threads = getLaunchBounds();
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    return emitOpError("launch bounds must be a multiple of 32 in [32, 1024], "
                       "got ")
           << threads;

  // The weight operand: rhs in row mode, out in outer-product mode.
  bool outer = isOuterProduct();
  MemRefType weight = outer ? out : rhs;
  StringRef weightName = outer ? "out" : "rhs";
  int64_t base = getSegments() ? 3 : 2;
  if (weight.getRank() != base && weight.getRank() != base + 1)
    return emitOpError()
           << weightName << " must be a weight of rank " << base
           << (getSegments() ? " ([T, K, N] with segments)" : " ([K, N])")
           << " or " << base + 1 << " (per-head blocks), got rank "
           << weight.getRank();
  bool perHead = weight.getRank() == base + 1;
  unsigned kDim = weight.getRank() - 2, nDim = weight.getRank() - 1;
  if (!outer && getTransposeRhs())
    std::swap(kDim, nDim);
  std::optional<int64_t> heads =
      perHead ? staticDim(weight, base - 2) : std::optional<int64_t>(1);
  std::optional<int64_t> k = staticDim(weight, kDim);
  std::optional<int64_t> n = staticDim(weight, nDim);
  auto times = [](std::optional<int64_t> a, std::optional<int64_t> b) {
    return a && b ? llvm::checkedMul(*a, *b) : std::nullopt;
  };
  std::optional<int64_t> fullK = times(heads, k), fullN = times(heads, n);

  if (outer) {
    if (getTransposeRhs())
      return emitOpError("transpose_rhs has no meaning in an outer-product "
                         "(transpose_lhs) GEMM");
    if (getOutRows())
      return emitOpError("an outer-product GEMM writes weight slices; it "
                         "takes no out_rows scatter list");
    if (rhs.getRank() != 2)
      return emitOpError("rhs of an outer-product GEMM must be a row matrix "
                         "[rows, N], got rank ")
             << rhs.getRank();
    if (fullK && failed(checkDim(*this, staticDim(lhs, 1), *fullK,
                                 "lhs row width")))
      return failure();
    if (fullN && failed(checkDim(*this, staticDim(rhs, 1), *fullN,
                                 "rhs row width")))
      return failure();
  } else {
    if (getRhsRows())
      return emitOpError("rhs_rows is only meaningful in an outer-product "
                         "(transpose_lhs) GEMM");
    if (out.getRank() != 2)
      return emitOpError("out must be a row matrix [rows, N], got rank ")
             << out.getRank();
    if (fullK && failed(checkDim(*this, staticDim(lhs, 1), *fullK,
                                 "lhs row width")))
      return failure();
    if (fullN && failed(checkDim(*this, staticDim(out, 1), *fullN,
                                 "out row width")))
      return failure();
    if (getAtomic() && !getOutRows())
      return emitOpError("atomic stores need a scatter list (out_rows): "
                         "without one every output row has a single "
                         "producer");
  }

  if (failed(verifyRowDot(fullN, element)))
    return failure();

  if (Value scale = getRowScale()) {
    auto scaleType = cast<MemRefType>(scale.getType());
    if (scaleType.getElementType() != element)
      return emitOpError("row_scale must have the element type ") << element;
    if (scaleType.getRank() != 1 && scaleType.getRank() != 2)
      return emitOpError("row_scale is [rows] or [rows, heads], got rank ")
             << scaleType.getRank();
    if (scaleType.getRank() == 2 && fullN) {
      std::optional<int64_t> scaleHeads = staticDim(scaleType, 1);
      if (scaleHeads && (*scaleHeads <= 0 || *fullN % *scaleHeads != 0))
        return emitOpError("row_scale has ")
               << *scaleHeads << " heads, which does not divide the "
               << "output width " << *fullN;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TraversalOp
//===----------------------------------------------------------------------===//

unsigned TraversalOp::getNumAdjacencyArrays(Adjacency format) {
  switch (format) {
  case Adjacency::None:
    return 0;
  case Adjacency::COO:
    return 3; // src, dst, etype
  case Adjacency::CSR:
    return 4; // row_ptr, src, eid, etype
  case Adjacency::Pairs:
    return 4; // src, dst, etype, pair_eid
  }
  llvm_unreachable("unknown adjacency format");
}

AccessScheme TraversalOp::getScheme(unsigned index) {
  return cast<AccessSchemeAttr>(getSchemes()[index]).getValue();
}

namespace {
/// Parses `(` operand `:` type `as` scheme, ... `)`.
ParseResult
parseOperandsWithSchemes(OpAsmParser &parser, StringRef keyword,
                         SmallVectorImpl<OpAsmParser::UnresolvedOperand> &ops,
                         SmallVectorImpl<Type> &types,
                         SmallVectorImpl<Attribute> &schemes) {
  if (failed(parser.parseOptionalKeyword(keyword)))
    return success();
  return parser.parseCommaSeparatedList(
      OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
        OpAsmParser::UnresolvedOperand operand;
        Type type;
        StringRef schemeName;
        if (parser.parseOperand(operand) || parser.parseColonType(type) ||
            parser.parseKeyword("as"))
          return failure();
        SMLoc loc = parser.getCurrentLocation();
        if (parser.parseKeyword(&schemeName))
          return failure();
        std::optional<AccessScheme> scheme = symbolizeAccessScheme(schemeName);
        if (!scheme)
          return parser.emitError(loc, "unknown access scheme '")
                 << schemeName << "'";
        ops.push_back(operand);
        types.push_back(type);
        schemes.push_back(
            AccessSchemeAttr::get(parser.getContext(), *scheme));
        return success();
      });
}

/// Parses an optional `keyword(%operand : type)`.
ParseResult
parseOptionalNamedOperand(OpAsmParser &parser, StringRef keyword,
                          SmallVectorImpl<OpAsmParser::UnresolvedOperand> &ops,
                          SmallVectorImpl<Type> &types) {
  if (failed(parser.parseOptionalKeyword(keyword)))
    return success();
  OpAsmParser::UnresolvedOperand operand;
  Type type;
  if (parser.parseLParen() || parser.parseOperand(operand) ||
      parser.parseColonType(type) || parser.parseRParen())
    return failure();
  ops.push_back(operand);
  types.push_back(type);
  return success();
}
} // namespace

ParseResult TraversalOp::parse(OpAsmParser &parser, OperationState &result) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  StringRef domainName;
  if (parser.parseKeyword(&domainName))
    return failure();
  std::optional<Domain> domain = symbolizeDomain(domainName);
  if (!domain)
    return parser.emitError(loc, "expected 'edges' or 'nodes'");

  Adjacency format = Adjacency::None;
  SmallVector<OpAsmParser::UnresolvedOperand> adjacency, compactMap, nodeTypes,
      inputs, outputs;
  SmallVector<Type> adjacencyTypes, compactMapTypes, nodeTypesTypes,
      inputTypes, outputTypes;
  if (*domain == Domain::Edges) {
    SMLoc formatLoc = parser.getCurrentLocation();
    StringRef formatName;
    if (parser.parseKeyword(&formatName))
      return failure();
    std::optional<Adjacency> parsed = symbolizeAdjacency(formatName);
    if (!parsed || *parsed == Adjacency::None)
      return parser.emitError(formatLoc,
                              "expected adjacency 'coo', 'csr' or 'pairs'");
    format = *parsed;
    if (parser.parseLParen() || parser.parseOperandList(adjacency) ||
        parser.parseColonTypeList(adjacencyTypes) || parser.parseRParen())
      return failure();
  }
  SmallVector<Attribute> schemes;
  if (parseOptionalNamedOperand(parser, "compact_map", compactMap,
                                compactMapTypes) ||
      parseOptionalNamedOperand(parser, "node_types", nodeTypes,
                                nodeTypesTypes) ||
      parseOperandsWithSchemes(parser, "ins", inputs, inputTypes, schemes) ||
      parseOperandsWithSchemes(parser, "outs", outputs, outputTypes, schemes))
    return failure();

  Properties &props = result.getOrAddProperties<Properties>();
  props.domain = DomainAttr::get(ctx, *domain);
  props.adjacency_format = AdjacencyAttr::get(ctx, format);
  props.schemes = ArrayAttr::get(ctx, schemes);
  if (succeeded(parser.parseOptionalKeyword("launch_bounds"))) {
    int64_t bounds;
    if (parser.parseLParen() || parser.parseInteger(bounds) ||
        parser.parseRParen())
      return failure();
    props.launch_bounds = IntegerAttr::get(IntegerType::get(ctx, 64), bounds);
  }
  props.operandSegmentSizes = {static_cast<int32_t>(adjacency.size()),
                               static_cast<int32_t>(compactMap.size()),
                               static_cast<int32_t>(nodeTypes.size()),
                               static_cast<int32_t>(inputs.size()),
                               static_cast<int32_t>(outputs.size())};
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  if (parser.resolveOperands(adjacency, adjacencyTypes, loc, result.operands) ||
      parser.resolveOperands(compactMap, compactMapTypes, loc,
                             result.operands) ||
      parser.resolveOperands(nodeTypes, nodeTypesTypes, loc, result.operands) ||
      parser.resolveOperands(inputs, inputTypes, loc, result.operands) ||
      parser.resolveOperands(outputs, outputTypes, loc, result.operands))
    return failure();

  Region *body = result.addRegion();
  if (parser.parseRegion(*body, /*arguments=*/{}))
    return failure();
  Builder builder(ctx);
  ensureTerminator(*body, builder, result.location);
  return success();
}

void TraversalOp::print(OpAsmPrinter &p) {
  p << " " << stringifyDomain(getDomain());
  if (getDomain() == Domain::Edges) {
    p << " " << stringifyAdjacency(getAdjacencyFormat()) << "(";
    p << getAdjacency() << " : " << getAdjacency().getTypes() << ")";
  }
  if (Value map = getCompactMap())
    p << " compact_map(" << map << " : " << map.getType() << ")";
  if (Value types = getNodeTypes())
    p << " node_types(" << types << " : " << types.getType() << ")";
  unsigned schemeIndex = 0;
  auto printGroup = [&](StringRef keyword, ValueRange values) {
    if (values.empty())
      return;
    p << " " << keyword << "(";
    llvm::interleaveComma(values, p, [&](Value value) {
      p << value << " : " << value.getType() << " as "
        << stringifyAccessScheme(getScheme(schemeIndex++));
    });
    p << ")";
  };
  printGroup("ins", getInputs());
  printGroup("outs", getOutputs());
  if (getLaunchBounds() != 256)
    p << " launch_bounds(" << getLaunchBounds() << ")";
  p.printOptionalAttrDictWithKeyword(
      (*this)->getDiscardableAttrDictionary().getValue());
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/true,
                /*printBlockTerminators=*/false);
}

LogicalResult TraversalOp::verify() {
  Domain domain = getDomain();
  Adjacency format = getAdjacencyFormat();
  if ((domain == Domain::Nodes) != (format == Adjacency::None))
    return emitOpError("edge traversals need 'coo', 'csr' or 'pairs' "
                       "adjacency and node traversals none");
  unsigned expected = getNumAdjacencyArrays(format);
  if (getAdjacency().size() != expected)
    return emitOpError("'")
           << stringifyAdjacency(format) << "' adjacency takes " << expected
           << " index arrays ("
           << (format == Adjacency::COO   ? "src, dst, etype"
               : format == Adjacency::CSR ? "row_ptr, src, eid, etype"
                                          : "src, dst, etype, pair_eid")
           << "), got " << getAdjacency().size();

  unsigned numOperands = getInputs().size() + getOutputs().size();
  if (getSchemes().size() != numOperands)
    return emitOpError("needs one access scheme per operand: ")
           << numOperands << " operands, " << getSchemes().size()
           << " schemes";

  SmallVector<Value> operands(getInputs());
  llvm::append_range(operands, getOutputs());
  for (auto [index, value] : llvm::enumerate(operands)) {
    AccessScheme scheme = getScheme(index);
    StringRef name = stringifyAccessScheme(scheme);
    bool edgeOnly = scheme == AccessScheme::Edge ||
                    scheme == AccessScheme::Compact ||
                    scheme == AccessScheme::Src ||
                    scheme == AccessScheme::Dst ||
                    scheme == AccessScheme::EdgeType;
    bool nodeOnly =
        scheme == AccessScheme::Node || scheme == AccessScheme::NodeType;
    if (edgeOnly && domain != Domain::Edges)
      return emitOpError("operand #")
             << index << ": access scheme '" << name
             << "' needs an edge traversal";
    if (nodeOnly && domain != Domain::Nodes)
      return emitOpError("operand #")
             << index << ": access scheme '" << name
             << "' needs a node traversal";
    if (scheme == AccessScheme::Compact && !getCompactMap())
      return emitOpError("operand #")
             << index << ": access scheme 'compact' needs a compact_map";
    if (scheme == AccessScheme::NodeType && !getNodeTypes())
      return emitOpError("operand #")
             << index << ": access scheme 'ntype' needs node_types";
    if (scheme != AccessScheme::Whole &&
        cast<MemRefType>(value.getType()).getRank() < 1)
      return emitOpError("operand #")
             << index << ": access scheme '" << name
             << "' selects a row, but the operand has rank 0";
  }
  int64_t threads = getLaunchBounds();
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    return emitOpError("launch bounds must be a multiple of 32 in [32, 1024], "
                       "got ")
           << threads;
  return success();
}

LogicalResult TraversalOp::verifyRegions() {
  Block &body = getBody().front();
  unsigned expected = 1 + getInputs().size() + getOutputs().size();
  if (body.getNumArguments() != expected)
    return emitOpError("body takes ")
           << expected
           << " index arguments (the edge or node id, then one row per "
              "operand), got "
           << body.getNumArguments();
  for (BlockArgument arg : body.getArguments())
    if (!arg.getType().isIndex())
      return emitOpError("body arguments must be of type index, got ")
             << arg.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// AccumulateOp
//===----------------------------------------------------------------------===//

LogicalResult AccumulateOp::verify() {
  auto traversal = (*this)->getParentOfType<TraversalOp>();
  if (!traversal)
    return emitOpError("must be nested in an htmpl.traversal");
  if (!llvm::is_contained(traversal.getOutputs(), getDest()))
    return emitOpError("destination must be one of the enclosing traversal's "
                       "outs");
  auto dest = cast<MemRefType>(getDest().getType());
  if (static_cast<int64_t>(getIndices().size()) != dest.getRank())
    return emitOpError("needs ")
           << dest.getRank() << " indices for its destination, got "
           << getIndices().size();
  if (getValue().getType() != dest.getElementType())
    return emitOpError("value type ")
           << getValue().getType()
           << " does not match the destination element type "
           << dest.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxAggregateOp
//===----------------------------------------------------------------------===//

/// Static head count and widths (the lowerings unroll over them), equal
/// widths of `values` and `out` split evenly over the heads, one element
/// type, and a launch of whole warps (one warp per destination on the GPU).
LogicalResult SoftmaxAggregateOp::verify() {
  auto scores = cast<MemRefType>(getScores().getType());
  auto values = cast<MemRefType>(getValues().getType());
  auto out = cast<MemRefType>(getOut().getType());
  if (scores.isDynamicDim(1) || scores.getDimSize(1) < 1)
    return emitOpError("scores need a static number of heads (columns), at "
                       "least 1");
  if (values.isDynamicDim(1) || out.isDynamicDim(1))
    return emitOpError("values and out need static widths");
  int64_t heads = scores.getDimSize(1), width = out.getDimSize(1);
  if (values.getDimSize(1) != width)
    return emitOpError("values width ")
           << values.getDimSize(1) << " differs from out width " << width;
  if (width < 1 || width % heads != 0)
    return emitOpError("out width ")
           << width << " is not a positive multiple of the " << heads
           << " heads";
  Type element = out.getElementType();
  if (scores.getElementType() != element ||
      values.getElementType() != element)
    return emitOpError("scores, values and out must share the element type ")
           << element;
  int64_t threads = getLaunchBounds();
  if (threads < 32 || threads % 32 != 0)
    return emitOpError("launch_bounds must be a positive multiple of 32 (one "
                       "warp per destination), got ")
           << threads;
  return success();
}
