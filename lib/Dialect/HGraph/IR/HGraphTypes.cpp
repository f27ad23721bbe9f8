//===- HGraphTypes.cpp - hgraph types ---------------------------*- C++ -*-===//

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hector::hgraph;

#include "hector/Dialect/HGraph/IR/HGraphTypeInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "hector/Dialect/HGraph/IR/HGraphTypes.cpp.inc"

void HGraphDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "hector/Dialect/HGraph/IR/HGraphTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Node-wise and edge-wise values: `<WIDTH x TYPE (, heads = H)?>`
//===----------------------------------------------------------------------===//

/// Bound on every width and dimension, so that products of sizes (per-head
/// widths, element counts) never overflow.
static constexpr int64_t kMaxDimension = int64_t(1) << 24;

static LogicalResult
verifyFeatureShape(function_ref<InFlightDiagnostic()> emitError,
                   int64_t width, Type elementType, int64_t heads) {
  if (width <= 0)
    return emitError() << "feature width must be positive, got " << width;
  if (width > kMaxDimension)
    return emitError() << "feature width " << width << " exceeds the limit "
                       << kMaxDimension;
  if (!isa<FloatType>(elementType))
    return emitError() << "feature element type must be a float type, got "
                       << elementType;
  if (heads <= 0)
    return emitError() << "head count must be positive, got " << heads;
  if (width % heads != 0)
    return emitError() << "head count " << heads
                       << " does not divide the feature width " << width;
  return success();
}

template <typename ValueType>
static Type parseFeatureType(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> dims;
  Type elementType;
  int64_t heads = 1;
  if (parser.parseLess() ||
      parser.parseDimensionList(dims, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (dims.size() != 1) {
    parser.emitError(loc, "expected one dimension (the feature width), got ")
        << dims.size();
    return {};
  }
  if (succeeded(parser.parseOptionalComma()) &&
      (parser.parseKeyword("heads") || parser.parseEqual() ||
       parser.parseInteger(heads)))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ValueType>(loc, parser.getContext(), dims.front(),
                                      elementType, heads);
}

static void printFeatureType(AsmPrinter &printer, int64_t width,
                             Type elementType, int64_t heads) {
  printer << "<" << width << "x" << elementType;
  if (heads != 1)
    printer << ", heads = " << heads;
  printer << ">";
}

Type NodeValueType::parse(AsmParser &parser) {
  return parseFeatureType<NodeValueType>(parser);
}
void NodeValueType::print(AsmPrinter &printer) const {
  printFeatureType(printer, getWidth(), getElementType(), getHeads());
}
LogicalResult
NodeValueType::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t width, Type elementType, int64_t heads) {
  return verifyFeatureShape(emitError, width, elementType, heads);
}

Type EdgeValueType::parse(AsmParser &parser) {
  return parseFeatureType<EdgeValueType>(parser);
}
void EdgeValueType::print(AsmPrinter &printer) const {
  printFeatureType(printer, getWidth(), getElementType(), getHeads());
}
LogicalResult
EdgeValueType::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t width, Type elementType, int64_t heads) {
  return verifyFeatureShape(emitError, width, elementType, heads);
}

//===----------------------------------------------------------------------===//
// Weights: `<INDEX, SHAPE x TYPE>`
//===----------------------------------------------------------------------===//

Type WeightType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef indexKeyword;
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess())
    return {};
  SMLoc indexLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&indexKeyword))
    return {};
  std::optional<WeightIndex> index = symbolizeWeightIndex(indexKeyword);
  if (!index) {
    parser.emitError(indexLoc, "expected weight index 'single', 'node' or "
                               "'edge', got '")
        << indexKeyword << "'";
    return {};
  }
  if (parser.parseComma() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<WeightType>(loc, parser.getContext(), *index, shape,
                                       elementType);
}

void WeightType::print(AsmPrinter &printer) const {
  printer << "<" << stringifyWeightIndex(getIndex()) << ", ";
  for (int64_t dim : getShape())
    printer << dim << "x";
  printer << getElementType() << ">";
}

LogicalResult WeightType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 WeightIndex, ArrayRef<int64_t> shape,
                                 Type elementType) {
  if (shape.empty() || shape.size() > 3)
    return emitError() << "a weight slice is a vector [n], a matrix "
                          "[in, out] or per-head blocks [H, in/H, out/H]; "
                          "got rank "
                       << shape.size();
  for (int64_t dim : shape)
    if (dim <= 0 || dim > kMaxDimension)
      return emitError() << "weight dimensions must be in [1, "
                         << kMaxDimension << "], got " << dim;
  if (!isa<FloatType>(elementType))
    return emitError() << "weight element type must be a float type, got "
                       << elementType;
  return success();
}

int64_t WeightType::getInputWidth() const {
  ArrayRef<int64_t> shape = getShape();
  return isPerHead() ? shape[0] * shape[1] : shape[0];
}

int64_t WeightType::getOutputWidth() const {
  ArrayRef<int64_t> shape = getShape();
  if (isVector())
    return shape[0];
  return isPerHead() ? shape[0] * shape[2] : shape[1];
}
