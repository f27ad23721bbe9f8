//===- HGraphToHTmpl.cpp - hgraph to htmpl template instances ---*- C++ -*-===//
//
// Lowers each hgraph.func to a func.func entry point over memrefs (the ABI of
// docs/compilation.md) whose body is a sequence of htmpl instances:
//
// 1. GEMM first: every typed_linear (transposed or not) becomes one
//    htmpl.gemm (gathering its input rows, one weight slice per type
//    segment, compact rows when the result is compact-materialized), and so
//    does every weight_grad (an outer-product GEMM summing per type
//    segment). A transposed typed_linear whose only use is an
//    `aggregate sum ... to src` scatters its rows into the source nodes
//    with atomic adds instead of storing one row per edge. A one-head `dot`
//    of a compact GEMM result with an edge-typed typed_vector (RGAT's
//    source score) is computed per pair in that GEMM's epilogue (row_dot).
// 2. Fused traversals next: row-wise ops (element-wise math, dot, scale,
//    slice, gather, typed_vector, relation_norm, degree_norm, zeros, equal,
//    leaky_relu_grad, dropout) are never stored; they are evaluated inside the
//    traversal of the op that consumes them (aggregate to dst or src,
//    edge_softmax, type_sum, a stored result), with per-head values hoisted
//    out of the feature loop.
// 3. Fallback: a value that must reach memory and has no GEMM or reduction
//    producer is stored by a plain traversal.
// 4. `edge_softmax ... by_type` and `group_sum` reduce (destination, edge
//    type) groups: one node traversal over the runs of one type in each CSR
//    row (TypeGroups.h).
//
// Results may be weights (gradients): they are written in place by the op
// that produces them. The `hgraph.name` / `hgraph.role` argument and result
// attributes and the `hgraph.kind` / `hgraph.primal` function attributes
// become the `hector.arg` dictionaries and the `hector.kind` /
// `hector.primal` attributes of the entry point (docs/compilation.md).
//
//===----------------------------------------------------------------------===//

#include "RowEvaluator.h"
#include "TypeGroups.h"
#include "WeightProduct.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "hector/Conversion/Passes.h"
#include "hector/EntryABI.h"
#include "hector/Dialect/HGraph/IR/HGraph.h"
#include "hector/Dialect/HGraph/IR/LoweringStorage.h"
#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>
#include <limits>

namespace hector {
#define GEN_PASS_DEF_HGRAPHTOHTMPL
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using namespace hector::lowering;
using hector::templates::constIndex;
using hector::templates::loadIndex;
namespace hg = hector::hgraph;
namespace ht = hector::htmpl;
namespace abi = hector::abi;
using ht::AccessScheme;

namespace {

//===----------------------------------------------------------------------===//
// The graph arrays of the ABI (runtime/include/hector/graph_arrays.def), in
// argument order.
//===----------------------------------------------------------------------===//

enum GraphArray : unsigned {
#define HECTOR_GRAPH_ARRAY(ID, name, length, type, check, range) ID,
#include "hector/graph_arrays.def"
#undef HECTOR_GRAPH_ARRAY
  NumGraphArrays
};

enum class GraphElement { INT32, FLOAT32 };

struct GraphArrayInfo {
  const char *name;
  const char *size;
  bool isFloat;
};

/// Every array is an argument of every entry point until the lowering
/// drops those its body does not read.
constexpr GraphArrayInfo kGraphArrays[NumGraphArrays] = {
#define HECTOR_GRAPH_ARRAY(ID, name, length, type, check, range)                \
  {#name, #length, GraphElement::type == GraphElement::FLOAT32},
#include "hector/graph_arrays.def"
#undef HECTOR_GRAPH_ARRAY
};

/// The widest feature row and the largest weight dimension this lowering
/// accepts. The code generators unroll per column tile (the CPU GEMM), so
/// the code, and its compile time, grow with the widths: at this bound an
/// HGT training library takes about 25 s to build on the CPU target (2
/// cores), four times that at 65536 (docs/compilation.md#limits).
constexpr int64_t kMaxCompiledWidth = 16384;

/// What an htmpl.accumulate or store does with a computed value.
enum class SinkKind { Store, Add, Max };

/// One output of a traversal. Head `h`, feature `f` of the computed value
/// lands in column `h * headStride + offset + f` (headStride 0: the
/// traversal's own head width).
struct Sink {
  Value memref;
  AccessScheme scheme;
  SinkKind kind;
  int64_t headStride = 0;
  int64_t offset = 0;
};

/// True when an argument or result attribute dictionary asks for compact
/// rows (one per unique (source, edge type) pair).
bool isCompact(DictionaryAttr attrs) {
  auto attr = attrs ? attrs.getAs<hg::MaterializationAttr>(
                          hg::HGraphDialect::getMaterializationAttrName())
                    : nullptr;
  return attr && attr.getValue() == hg::Materialization::Compact;
}

//===----------------------------------------------------------------------===//
// FunctionLowering: one hgraph.func.
//===----------------------------------------------------------------------===//

class FunctionLowering {
public:
  FunctionLowering(hg::FuncOp source, bool splitSoftmax,
                   bool fuseSoftmaxAggregate)
      : source(source), builder(source.getContext()), loc(source.getLoc()),
        splitSoftmax(splitSoftmax),
        fuseSoftmaxAggregate(fuseSoftmaxAggregate) {}

  LogicalResult run();

private:
  // Entry point and arguments.
  LogicalResult createEntryPoint();
  Type memrefFor(Type hgraphType);
  DictionaryAttr argAttr(StringRef role, StringRef name,
                         ArrayRef<Attribute> shape);
  SmallVector<Attribute> shapeSymbols(Type hgraphType, bool compactRows);
  FailureOr<std::string> roleOf(DictionaryAttr attrs, StringRef fallback,
                                ArrayRef<StringRef> allowed,
                                Location where, const Twine &what);

  // Sizes and temporaries.
  Value graph(GraphArray array) { return graphArgs[array]; }
  Value size(GraphArray array);
  Value allocate(Value hgraphValue, bool compactRows = false);
  Value allocateNodeRows(hg::FeatureType type);
  Value outputFor(Value hgraphValue, bool compactRows = false);
  Value destinationFor(Value hgraphValue, bool compactRows = false);
  Value weightDestination(Value hgraphWeight);

  // Lowering of the ops that produce memory.
  LogicalResult checkWidths();
  LogicalResult storeRows(Value value);
  LogicalResult lower(Operation *op);
  LogicalResult lowerTypedLinear(hg::TypedLinearOp op);
  void fuseRowDot(hg::TypedLinearOp op, ht::GemmOp product);
  LogicalResult lowerWeightGrad(hg::WeightGradOp op);
  LogicalResult weightGradGemm(hg::WeightGradOp op, Value out, bool accumulate);
  LogicalResult lowerWeightAdd(hg::AddOp op);
  LogicalResult lowerWeightOuterTerm(hg::WeightOuterOp op);
  LogicalResult lowerTypeSum(hg::TypeSumOp op);
  hg::ScaleOp typeSumOverPairs(hg::TypeSumOp op);
  bool hasCompactRows(Value edgeValue);
  LogicalResult lowerTypeSumOverPairs(hg::TypeSumOp op, hg::ScaleOp scale);
  LogicalResult lowerAggregate(hg::AggregateOp op);
  LogicalResult scatterToSources(hg::TypedLinearOp linear, Value out);
  FailureOr<Value> pairSums(Value edgeValue);
  void releasePairSums(Value edgeValue);
  LogicalResult lowerEdgeSoftmax(hg::EdgeSoftmaxOp op);
  LogicalResult lowerEdgeSoftmaxSplit(hg::EdgeSoftmaxOp op);
  LogicalResult finishEdgeSoftmax(hg::EdgeSoftmaxOp op, Value score, Value max,
                                  Value sum);
  hg::AggregateOp fusedAggregateOf(hg::EdgeSoftmaxOp op);
  LogicalResult lowerSoftmaxAggregate(hg::AggregateOp op, hg::ScaleOp scale,
                                      Value scores);
  LogicalResult lowerTypeGroups(Value input, Value result,
                                TypeGroupResult kind);
  LogicalResult lowerConcat(hg::ConcatOp op);
  LogicalResult lowerReturn(hg::ReturnOp op);
  LogicalResult lowerEvict(hg::EvictOp op);
  LogicalResult lowerPrefetch(hg::PrefetchOp op);
  void callOffload(StringRef function, int64_t slot,
                   std::optional<hg::OffloadTier> tier, Value buffer);
  Operation *lastMemoryRead(Value value);
  void releaseAfter(Operation *op, Value buffer);
  void freeAfter(Operation *op);
  void waitBefore(Operation *op);
  void freeTemporariesAfterLastUse();
  DictionaryAttr offloadEntry(StringRef name, StringRef direction,
                              int64_t slot, StringRef tier, Value hgraphValue,
                              bool compactRows);
  LogicalResult nodeBuffer(Value value, Value &buffer);
  Value storedPerEdge(Value value);
  LogicalResult edgeLeaf(Value value, Leaf &leaf);
  LogicalResult edgeRows(Value value, Value &buffer, Value &rows);
  LogicalResult weightBuffer(Operation *user, Value weight, Value &buffer);
  LogicalResult store(Value value, Value destination, bool edgeDomain);
  LogicalResult storeOutput(Value value);

  // Traversal construction.
  using Compute = function_ref<Value(OpBuilder &, RowEvaluator &, Value head,
                                     Value feature)>;
  LogicalResult traverse(bool edgeDomain, ArrayRef<Value> roots,
                         ArrayRef<Leaf> extraInputs, ArrayRef<Sink> sinks,
                         int64_t heads, int64_t headWidth, Compute compute);
  void fill(Value memref, double value);
  void fillWeight(Value memref, Value source, bool add = false);
  LogicalResult unreadable(Value value);

  hg::FuncOp source;
  OpBuilder builder;
  Location loc;
  bool splitSoftmax;
  bool fuseSoftmaxAggregate;
  func::FuncOp target;
  SmallVector<Value> graphArgs;
  DenseMap<unsigned, Value> sizes;
  ValueStore values;
  /// hgraph values returned by the function: their output buffers.
  DenseMap<Value, Value> outputs;
  /// Output buffers with one row per unique (source, edge type) pair.
  llvm::SmallDenseSet<Value, 4> compactOutputs;
  /// Output buffers already written by the op that produces their value.
  llvm::SmallDenseSet<Value, 4> written;
  SmallVector<Value> temporaries;
  /// Whether (source, edge type) pairs pay in this function (hg::pairsPay):
  /// per-edge sums into sources go through the pairs too.
  bool pairsPay = false;
  /// Per-pair sums of edge values [P, width] and how many consumers have
  /// yet to read them (pairSums / releasePairSums).
  DenseMap<Value, std::pair<Value, unsigned>> pairSumBuffers;
  /// The stored scores of each edge_softmax whose only consumer is an
  /// aggregation that lowers with it to one htmpl.softmax_aggregate
  /// (fusedAggregateOf); its α is never stored.
  DenseMap<Value, Value> fusedSoftmaxScores;
  /// Row-wise values stored where they are defined instead of being fused
  /// into their consumers (hg::rowsStoredByFusion).
  llvm::DenseSet<Value> storedRows;
  /// Offload: names and layouts of the stored arguments, the names of the
  /// stored results (empty for the others), the manifest's entries
  /// (`hector.offload`), and buffers to free once an op is lowered.
  DenseMap<Value, std::string> storedNames;
  DenseMap<Value, bool> storedCompact;
  SmallVector<std::string> storedResultNames;
  SmallVector<Attribute> offloaded;
  DenseMap<Operation *, SmallVector<Value, 1>> freeAfterOp;
  /// Prefetch slots to wait for before an op is lowered (its first reader).
  DenseMap<Operation *, SmallVector<int64_t, 1>> waitBeforeOp;
};

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

Type FunctionLowering::memrefFor(Type hgraphType) {
  if (isa<hg::SeedType>(hgraphType)) // one int64 word (hgraph.dropout)
    return MemRefType::get({1}, builder.getI64Type());
  if (auto feature = dyn_cast<hg::FeatureType>(hgraphType))
    return MemRefType::get({ShapedType::kDynamic, feature.getWidth()},
                           feature.getElementType());
  auto weight = cast<hg::WeightType>(hgraphType);
  SmallVector<int64_t> shape;
  if (weight.getIndex() != hg::WeightIndex::Single)
    shape.push_back(ShapedType::kDynamic);
  llvm::append_range(shape, weight.getShape());
  return MemRefType::get(shape, weight.getElementType());
}

SmallVector<Attribute> FunctionLowering::shapeSymbols(Type hgraphType,
                                                      bool compactRows) {
  SmallVector<Attribute> shape;
  if (isa<hg::SeedType>(hgraphType))
    return {builder.getI64IntegerAttr(1)};
  if (auto feature = dyn_cast<hg::FeatureType>(hgraphType)) {
    shape.push_back(builder.getStringAttr(!feature.isEdgeWise() ? "N"
                                          : compactRows         ? "P"
                                                                : "E"));
    shape.push_back(builder.getI64IntegerAttr(feature.getWidth()));
    return shape;
  }
  auto weight = cast<hg::WeightType>(hgraphType);
  if (weight.getIndex() == hg::WeightIndex::EdgeType)
    shape.push_back(builder.getStringAttr("R"));
  else if (weight.getIndex() == hg::WeightIndex::NodeType)
    shape.push_back(builder.getStringAttr("T"));
  for (int64_t dim : weight.getShape())
    shape.push_back(builder.getI64IntegerAttr(dim));
  return shape;
}

DictionaryAttr FunctionLowering::argAttr(StringRef role, StringRef name,
                                         ArrayRef<Attribute> shape) {
  return builder.getDictionaryAttr(
      {builder.getNamedAttr("role", builder.getStringAttr(role)),
       builder.getNamedAttr("name", builder.getStringAttr(name)),
       builder.getNamedAttr("shape", builder.getArrayAttr(shape))});
}

FailureOr<std::string>
FunctionLowering::roleOf(DictionaryAttr attrs, StringRef fallback,
                         ArrayRef<StringRef> allowed, Location where,
                         const Twine &what) {
  Attribute role = attrs ? attrs.get("hgraph.role") : nullptr;
  if (!role)
    return fallback.str();
  auto text = dyn_cast<StringAttr>(role);
  if (!text || !llvm::is_contained(allowed, text.getValue())) {
    InFlightDiagnostic diag = mlir::emitError(where)
                              << "hgraph-to-htmpl: 'hgraph.role' of " << what
                              << " must be one of";
    for (auto [i, name] : llvm::enumerate(allowed))
      diag << (i ? ", \"" : " \"") << name << "\"";
    return diag << "; got " << role;
  }
  return text.getValue().str();
}

LogicalResult FunctionLowering::createEntryPoint() {
  MLIRContext *ctx = source.getContext();
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  for (const GraphArrayInfo &info : kGraphArrays) {
    Type element = info.isFloat ? Type(Float32Type::get(ctx))
                                : Type(IntegerType::get(ctx, 32));
    types.push_back(MemRefType::get({ShapedType::kDynamic}, element));
    attrs.push_back(
        argAttr("graph", info.name, {builder.getStringAttr(info.size)}));
  }
  // Where a materialization attribute asks for compact rows, it must be on
  // an edge-wise value.
  auto compactRows = [&](DictionaryAttr dict, Type type,
                         const Twine &what) -> FailureOr<bool> {
    if (!isCompact(dict))
      return false;
    if (auto stored = dyn_cast<hg::StoredType>(type))
      type = stored.getValueType();
    auto feature = dyn_cast<hg::FeatureType>(type);
    if (!feature || !feature.isEdgeWise())
      return mlir::emitError(loc)
             << "hgraph-to-htmpl: " << what << " has compact materialization "
             << "but is not edge-wise: " << type;
    return true;
  };
  SmallVector<bool> compactArgs;
  for (auto [index, arg] : llvm::enumerate(source.getArguments())) {
    if (isa<hg::GraphType>(arg.getType()))
      continue;
    DictionaryAttr dict = source.getArgAttrDict(index);
    std::string name = source.getArgumentName(index);
    FailureOr<std::string> role =
        roleOf(dict, isa<hg::WeightType>(arg.getType()) ? "weight" : "input",
               abi::hgraphRoles(/*results=*/false), arg.getLoc(),
               "argument '" + name + "'");
    FailureOr<bool> compact =
        compactRows(dict, arg.getType(), "argument '" + name + "'");
    if (failed(role) || failed(compact))
      return failure();
    compactArgs.push_back(*compact);
    // A stored value has no buffer in the signature: the entry reads it
    // back from the tensor cache (lowerPrefetch).
    if (auto stored = dyn_cast<hg::StoredType>(arg.getType())) {
      if (*role != "saved")
        return mlir::emitError(arg.getLoc())
               << "hgraph-to-htmpl: stored argument '" << name
               << "' must have role 'saved'";
      storedNames[arg] = name;
      storedCompact[arg] = *compact;
      continue;
    }
    types.push_back(memrefFor(arg.getType()));
    DictionaryAttr argDict =
        argAttr(*role, name, shapeSymbols(arg.getType(), *compact));
    // A node-wise input kept in host memory (hgraph-host-resident): kernels
    // read it in place; the manifest tells callers.
    if (dict && dict.get("hgraph.host_resident")) {
      auto feature = dyn_cast<hg::FeatureType>(arg.getType());
      if (!feature || feature.isEdgeWise() || *role != "input")
        return mlir::emitError(arg.getLoc())
               << "hgraph-to-htmpl: argument '" << name
               << "' is marked 'hgraph.host_resident' but is not a node-wise "
                  "input";
      SmallVector<NamedAttribute> entries(argDict.getValue());
      entries.push_back(
          builder.getNamedAttr("host_resident", builder.getBoolAttr(true)));
      argDict = builder.getDictionaryAttr(entries);
    }
    attrs.push_back(argDict);
  }
  SmallVector<bool> compactResults;
  for (auto [index, type] : llvm::enumerate(source.getResultTypes())) {
    DictionaryAttr dict = source.getResultAttrDict(index);
    std::string name = ("result" + Twine(index)).str();
    if (auto named =
            source.getResultAttrOfType<StringAttr>(index, "hgraph.name"))
      name = named.str();
    FailureOr<std::string> role =
        roleOf(dict, "output", abi::hgraphRoles(/*results=*/true), loc,
               "result '" + name + "'");
    FailureOr<bool> compact = compactRows(dict, type, "result '" + name + "'");
    if (failed(role) || failed(compact))
      return failure();
    compactResults.push_back(*compact);
    if (auto stored = dyn_cast<hg::StoredType>(type)) {
      if (*role != "saved")
        return mlir::emitError(loc)
               << "hgraph-to-htmpl: stored result '" << name
               << "' must have role 'saved'";
      storedResultNames.push_back(name);
      continue;
    }
    storedResultNames.push_back("");
    types.push_back(memrefFor(type));
    attrs.push_back(argAttr(*role, name, shapeSymbols(type, *compact)));
  }

  // The entry's kind and the function it was derived from (the manifest's
  // `kind` and `primal`; the dialect verifies both attributes).
  StringRef kind = "inference", primal = source.getSymName();
  if (auto text = source->getAttrOfType<StringAttr>("hgraph.kind"))
    kind = text.getValue();
  if (auto text = source->getAttrOfType<StringAttr>("hgraph.primal");
      text && !text.empty())
    primal = text.getValue();

  builder.setInsertionPoint(source);
  target = func::FuncOp::create(builder, loc, source.getSymName(),
                                builder.getFunctionType(types, {}));
  target->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  target->setAttr("hector.entry", builder.getUnitAttr());
  target->setAttr("hector.kind", builder.getStringAttr(kind));
  target->setAttr("hector.primal", builder.getStringAttr(primal));
  // All at once: setting them one by one rebuilds the list each time.
  SmallVector<DictionaryAttr> argDicts;
  for (DictionaryAttr attr : attrs)
    argDicts.push_back(
        builder.getDictionaryAttr(builder.getNamedAttr("hector.arg", attr)));
  target.setAllArgAttrs(argDicts);
  Block *entry = target.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  // Bind the hgraph arguments to their buffers.
  graphArgs.assign(entry->args_begin(), entry->args_begin() + NumGraphArrays);
  values.edgeNorm = graph(EDGE_NORM);
  values.csrRowPtr = graph(CSR_ROW_PTR);
  values.edgePerm = graph(EDGE_PERM);
  unsigned next = NumGraphArrays, position = 0;
  for (BlockArgument arg : source.getArguments()) {
    if (isa<hg::GraphType>(arg.getType()))
      continue;
    bool compact = compactArgs[position++];
    if (isa<hg::StoredType>(arg.getType()))
      continue;
    Value memref = entry->getArgument(next++);
    if (isa<hg::WeightType>(arg.getType()))
      values.weights[arg] = memref;
    else if (isa<hg::SeedType>(arg.getType()))
      values.seeds[arg] = memref;
    else if (cast<hg::FeatureType>(arg.getType()).isEdgeWise())
      values.edges[arg] = {memref, compact ? AccessScheme::Compact
                                           : AccessScheme::Edge};
    else
      values.nodes[arg] = memref;
  }
  // Every returned value may be written straight into the caller's buffer
  // by the op that produces it (outputFor); the others are stored at the
  // return.
  auto ret = cast<hg::ReturnOp>(source.getBody().front().getTerminator());
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    if (isa<hg::StoredType>(value.getType()))
      continue; // evicted (lowerEvict), not returned in a buffer
    Value output = entry->getArgument(next++);
    if (compactResults[index])
      compactOutputs.insert(output);
    outputs.try_emplace(value, output);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Sizes and temporaries
//===----------------------------------------------------------------------===//

Value FunctionLowering::size(GraphArray array) {
  auto [it, inserted] = sizes.try_emplace(array);
  if (inserted) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&target.getBody().front());
    it->second = memref::DimOp::create(builder, loc, graph(array), 0);
  }
  return it->second;
}

/// A temporary with one row of `type`'s width per node.
Value FunctionLowering::allocateNodeRows(hg::FeatureType type) {
  auto memrefType = MemRefType::get({ShapedType::kDynamic, type.getWidth()},
                                    type.getElementType());
  Value memref = memref::AllocOp::create(builder, loc, memrefType,
                                         ValueRange{size(NODE_TYPE)});
  temporaries.push_back(memref);
  return memref;
}

Value FunctionLowering::allocate(Value hgraphValue, bool compactRows) {
  auto type = cast<hg::FeatureType>(hgraphValue.getType());
  Value rows = !type.isEdgeWise() ? size(NODE_TYPE)
               : compactRows      ? size(COMPACT_SRC)
                                  : size(EDGE_SRC);
  Value memref = memref::AllocOp::create(
      builder, loc, cast<MemRefType>(memrefFor(type)), ValueRange{rows});
  temporaries.push_back(memref);
  return memref;
}

/// The caller's output buffer for `hgraphValue` when it is returned with
/// rows of the kind the producer writes (compact or not), else null. The
/// caller of this function writes it: the return then leaves it alone.
Value FunctionLowering::outputFor(Value hgraphValue, bool compactRows) {
  Value output = outputs.lookup(hgraphValue);
  if (!output || compactOutputs.contains(output) != compactRows)
    return {};
  written.insert(output);
  return output;
}

Value FunctionLowering::destinationFor(Value hgraphValue, bool compactRows) {
  if (Value output = outputFor(hgraphValue, compactRows))
    return output;
  return allocate(hgraphValue, compactRows);
}

/// The buffer a weight-typed result is written into: the caller's output
/// when it is returned, else a temporary with one slice per type.
Value FunctionLowering::weightDestination(Value hgraphWeight) {
  Value out = outputFor(hgraphWeight);
  if (!out) {
    auto type = cast<hg::WeightType>(hgraphWeight.getType());
    SmallVector<Value, 1> sizes;
    if (type.getIndex() != hg::WeightIndex::Single) {
      bool edge = type.getIndex() == hg::WeightIndex::EdgeType;
      Value offsets = size(edge ? ETYPE_OFFSETS : NTYPE_OFFSETS);
      sizes.push_back(arith::SubIOp::create(
          builder, loc, offsets,
          arith::ConstantIndexOp::create(builder, loc, 1)));
    }
    out = memref::AllocOp::create(builder, loc,
                                  cast<MemRefType>(memrefFor(type)), sizes);
    temporaries.push_back(out);
  }
  values.weights[hgraphWeight] = out;
  return out;
}

/// The buffer of a weight operand; a weight of zeros is filled first.
LogicalResult FunctionLowering::weightBuffer(Operation *user, Value weight,
                                             Value &buffer) {
  if ((buffer = values.weights.lookup(weight)))
    return success();
  if (weight.getDefiningOp<hg::ZerosOp>()) {
    buffer = weightDestination(weight);
    fillWeight(buffer, Value());
    return success();
  }
  return user->emitError("hgraph-to-htmpl: this weight operand is not in "
                         "memory (its producer is not lowered)");
}

LogicalResult FunctionLowering::unreadable(Value value) {
  return mlir::emitError(value.getLoc())
         << "hgraph-to-htmpl: cannot lower this value here; it is neither "
            "stored nor computable row by row";
}

/// The buffer of a node-wise value, storing it first when it is computed row
/// by row (for example a residual sum read by a GEMM).
LogicalResult FunctionLowering::nodeBuffer(Value value, Value &buffer) {
  if ((buffer = values.nodes.lookup(value)))
    return success();
  buffer = destinationFor(value);
  if (failed(store(value, buffer, /*edgeDomain=*/false)))
    return failure();
  values.nodes[value] = buffer;
  return success();
}

/// The buffer of an edge-wise value stored one row per edge, or null.
Value FunctionLowering::storedPerEdge(Value value) {
  auto it = values.edges.find(value);
  if (it == values.edges.end() || it->second.scheme != AccessScheme::Edge)
    return {};
  return it->second.memref;
}

/// The stored rows of an edge-wise value, storing it first when needed.
LogicalResult FunctionLowering::edgeLeaf(Value value, Leaf &leaf) {
  if (auto it = values.edges.find(value);
      it != values.edges.end() &&
      (it->second.scheme == AccessScheme::Edge ||
       it->second.scheme == AccessScheme::Compact)) {
    leaf = it->second;
    return success();
  }
  Value buffer = destinationFor(value);
  if (failed(store(value, buffer, /*edgeDomain=*/true)))
    return failure();
  leaf = {buffer, AccessScheme::Edge};
  values.edges[value] = leaf;
  return success();
}

/// An edge-wise value as GEMM rows: `buffer` holds it and edge `e` reads
/// row `rows[e]` (`rows` null: row e). Node buffers read at an endpoint
/// (gathers included) and compact rows are read in place, through edge_src /
/// edge_dst / compact_map.
LogicalResult FunctionLowering::edgeRows(Value value, Value &buffer,
                                         Value &rows) {
  Leaf leaf;
  if (auto it = values.edges.find(value); it != values.edges.end()) {
    leaf = it->second;
  } else if (auto gather = value.getDefiningOp<hg::GatherOp>()) {
    if (failed(nodeBuffer(gather.getInput(), leaf.memref)))
      return failure();
    leaf.scheme = gather.getFrom() == hg::Endpoint::Src ? AccessScheme::Src
                                                        : AccessScheme::Dst;
  } else if (failed(edgeLeaf(value, leaf))) {
    return failure();
  }
  buffer = leaf.memref;
  switch (leaf.scheme) {
  case AccessScheme::Compact:
    rows = graph(COMPACT_MAP);
    return success();
  case AccessScheme::Src:
    rows = graph(EDGE_SRC);
    return success();
  case AccessScheme::Dst:
    rows = graph(EDGE_DST);
    return success();
  default:
    rows = Value();
    return success();
  }
}

//===----------------------------------------------------------------------===//
// Traversals
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::traverse(bool edgeDomain, ArrayRef<Value> roots,
                                         ArrayRef<Leaf> extraInputs,
                                         ArrayRef<Sink> sinks, int64_t heads,
                                         int64_t headWidth, Compute compute) {
  RowEvaluator evaluator(values, edgeDomain);
  for (Value root : roots) {
    // A node-wise value read on edges must be in memory: store it first.
    while (Value missing = evaluator.collect(root)) {
      auto type = dyn_cast<hg::FeatureType>(missing.getType());
      Value buffer;
      if (!edgeDomain || !type || type.isEdgeWise() ||
          failed(nodeBuffer(missing, buffer)))
        return unreadable(missing);
    }
  }
  for (const Leaf &leaf : extraInputs)
    evaluator.addLeaf(leaf);
  unsigned numInputs = evaluator.getLeaves().size();
  SmallVector<unsigned> sinkLeaves;
  for (const Sink &sink : sinks)
    sinkLeaves.push_back(evaluator.addOutput({sink.memref, sink.scheme}));

  MLIRContext *ctx = builder.getContext();
  SmallVector<Value> inputs, outs;
  SmallVector<Attribute> schemes;
  bool needsCompactMap = false, needsNodeTypes = false;
  for (auto [index, leaf] : llvm::enumerate(evaluator.getLeaves())) {
    (index < numInputs ? inputs : outs).push_back(leaf.memref);
    schemes.push_back(ht::AccessSchemeAttr::get(ctx, leaf.scheme));
    needsCompactMap |= leaf.scheme == AccessScheme::Compact;
    needsNodeTypes |= leaf.scheme == AccessScheme::NodeType;
  }
  // A node traversal takes its node count from an operand read `as node`,
  // else from node_type.
  needsNodeTypes |=
      !edgeDomain && llvm::none_of(evaluator.getLeaves(), [](const Leaf &leaf) {
        return leaf.scheme == AccessScheme::Node;
      });
  // Edges in canonical order, whose consecutive edges share destination
  // rows, unless everything the traversal writes is summed per (source, edge
  // type) pair: then in pair order, so that consecutive edges share that row
  // and a warp sums it before one atomic per element, instead of one per
  // edge and element.
  SmallVector<Value> adjacency;
  ht::Adjacency format = ht::Adjacency::None;
  if (edgeDomain) {
    adjacency = {graph(EDGE_SRC), graph(EDGE_DST), graph(EDGE_TYPE)};
    format = ht::Adjacency::COO;
    bool perPair = !sinks.empty() && llvm::all_of(sinks, [](const Sink &s) {
      return s.scheme == AccessScheme::Compact && s.kind != SinkKind::Store;
    });
    if (perPair) {
      adjacency.push_back(graph(PAIR_EID));
      format = ht::Adjacency::Pairs;
    }
  }
  auto traversal = ht::TraversalOp::create(
      builder, loc, adjacency, needsCompactMap ? graph(COMPACT_MAP) : Value(),
      needsNodeTypes ? graph(NODE_TYPE) : Value(), inputs, outs,
      edgeDomain ? ht::Domain::Edges : ht::Domain::Nodes, format,
      builder.getArrayAttr(schemes));

  // Body: (id, one row per operand) -> head loop -> feature loop.
  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&traversal.getBody());
  Type index = builder.getIndexType();
  body->addArgument(index, loc);
  for (size_t i = 0, e = schemes.size(); i < e; ++i)
    body->addArgument(index, loc);
  evaluator.bind(body->getArguments().drop_front());

  auto write = [&](OpBuilder &b, Value value, Value head, Value feature) {
    for (auto [sink, leaf] : llvm::zip(sinks, sinkLeaves)) {
      // A `whole` sink (a single vector weight) is indexed by column only.
      SmallVector<Value, 2> indices;
      if (sink.scheme != AccessScheme::Whole)
        indices.push_back(evaluator.row(leaf));
      if (sink.scheme == AccessScheme::Whole ||
          cast<MemRefType>(sink.memref.getType()).getRank() == 2) {
        int64_t stride = sink.headStride ? sink.headStride : headWidth;
        Value start = arith::MulIOp::create(
            b, loc, head, arith::ConstantIndexOp::create(b, loc, stride));
        Value shifted = arith::AddIOp::create(
            b, loc, feature,
            arith::ConstantIndexOp::create(b, loc, sink.offset));
        indices.push_back(arith::AddIOp::create(b, loc, start, shifted));
      }
      if (sink.kind == SinkKind::Store)
        memref::StoreOp::create(b, loc, value, sink.memref, indices);
      else
        ht::AccumulateOp::create(b, loc, value, sink.memref, indices,
                                 sink.kind == SinkKind::Add
                                     ? ht::Reduction::Add
                                     : ht::Reduction::Max);
    }
  };
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value numHeads = arith::ConstantIndexOp::create(builder, loc, heads);
  // Each loop is created before its body is filled, so that the evaluator
  // sees every block inside its parent (values hoisted per head are read in
  // the feature loop).
  auto headLoop = scf::ForOp::create(builder, loc, zero, numHeads, one);
  OpBuilder b = OpBuilder::atBlockTerminator(headLoop.getBody());
  Value head = headLoop.getInductionVar();
  if (headWidth == 1) {
    write(b, compute(b, evaluator, head, zero), head, zero);
  } else {
    for (Value root : roots)
      evaluator.hoistPerHead(b, root, head);
    Value width = arith::ConstantIndexOp::create(b, loc, headWidth);
    auto featureLoop = scf::ForOp::create(b, loc, zero, width, one);
    OpBuilder inner = OpBuilder::atBlockTerminator(featureLoop.getBody());
    Value feature = featureLoop.getInductionVar();
    write(inner, compute(inner, evaluator, head, feature), head, feature);
  }
  ht::YieldOp::create(builder, loc);
  return success();
}

/// Stores the row expression `value` into `destination`, one row per node or
/// edge.
LogicalResult FunctionLowering::store(Value value, Value destination,
                                      bool edgeDomain) {
  auto type = cast<hg::FeatureType>(value.getType());
  // A compact output gets one row per (source, edge type) pair; every edge
  // of a pair writes the same value there.
  bool compact = edgeDomain && compactOutputs.contains(destination);
  if (compact && !hg::dependsOnlySourceAndEdgeType(value)) {
    auto it = values.edges.find(value);
    if (it == values.edges.end() ||
        (it->second.scheme != AccessScheme::Compact &&
         it->second.scheme != AccessScheme::Src))
      return mlir::emitError(value.getLoc())
             << "hgraph-to-htmpl: a result with compact materialization must "
                "depend only on the source node and the edge type";
  }
  AccessScheme scheme = !edgeDomain ? AccessScheme::Node
                        : compact   ? AccessScheme::Compact
                                    : AccessScheme::Edge;
  Sink sink{destination, scheme, SinkKind::Store};
  return traverse(
      edgeDomain, {value}, {}, {sink}, type.getHeads(), type.getHeadWidth(),
      [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
        return eval.emit(b, value, head, feature);
      });
}

/// Stores an edge-wise `value` that is computed row by row into its output
/// buffer right away, when it is returned.
LogicalResult FunctionLowering::storeOutput(Value value) {
  Value output = outputs.lookup(value);
  if (!output)
    return success();
  written.insert(output);
  return store(value, output, /*edgeDomain=*/true);
}

/// Sets every element of the node buffer `memref` to `value`.
void FunctionLowering::fill(Value memref, double value) {
  auto type = cast<MemRefType>(memref.getType());
  Sink sink{memref, AccessScheme::Node, SinkKind::Store};
  (void)traverse(/*edgeDomain=*/false, {}, {}, {sink}, 1, type.getDimSize(1),
                 [&](OpBuilder &b, RowEvaluator &, Value, Value) -> Value {
                   return arith::ConstantOp::create(
                       b, loc, b.getFloatAttr(type.getElementType(), value));
                 });
}

/// Copies the weight buffer `source` into `memref` (adds it with `add`), or
/// zero-fills `memref` when `source` is null: a node-domain traversal over
/// the leading dimension (types, or the first slice dimension of a single
/// weight) with plain loops over the others.
void FunctionLowering::fillWeight(Value memref, Value source, bool add) {
  auto type = cast<MemRefType>(memref.getType());
  MLIRContext *ctx = builder.getContext();
  SmallVector<Value> inputs;
  SmallVector<Attribute> schemes;
  if (source) {
    inputs.push_back(source);
    schemes.push_back(ht::AccessSchemeAttr::get(ctx, AccessScheme::Node));
  }
  schemes.push_back(ht::AccessSchemeAttr::get(ctx, AccessScheme::Node));
  auto traversal = ht::TraversalOp::create(
      builder, loc, ValueRange{}, Value(), Value(), inputs, ValueRange{memref},
      ht::Domain::Nodes, ht::Adjacency::None, builder.getArrayAttr(schemes));
  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&traversal.getBody());
  Type index = builder.getIndexType();
  for (size_t i = 0; i < schemes.size() + 1; ++i)
    body->addArgument(index, loc);
  SmallVector<Value> indices{body->getArguments().back()};
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  std::function<void(OpBuilder &, int64_t)> nest = [&](OpBuilder &b,
                                                       int64_t dim) {
    if (dim == type.getRank()) {
      Value value =
          source ? memref::LoadOp::create(b, loc, source, indices).getResult()
                 : arith::ConstantOp::create(
                       b, loc, b.getFloatAttr(type.getElementType(), 0.0))
                       .getResult();
      if (add)
        value = arith::AddFOp::create(
            b, loc, memref::LoadOp::create(b, loc, memref, indices), value);
      memref::StoreOp::create(b, loc, value, memref, indices);
      return;
    }
    Value upper = arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
    scf::ForOp::create(b, loc, zero, upper, one, ValueRange{},
                       [&](OpBuilder &inner, Location, Value i, ValueRange) {
                         indices.push_back(i);
                         nest(inner, dim + 1);
                         indices.pop_back();
                         scf::YieldOp::create(inner, loc);
                       });
  };
  nest(builder, 1);
  ht::YieldOp::create(builder, loc);
}

//===----------------------------------------------------------------------===//
// GEMM-producing ops
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::lowerTypedLinear(hg::TypedLinearOp op) {
  // Lowered by the aggregate it feeds (scatterToSources).
  if (op->hasOneUse())
    if (auto aggregate = dyn_cast<hg::AggregateOp>(*op->getUsers().begin()))
      if (hg::scatteredLinear(aggregate) == op)
        return success();
  auto weightType = cast<hg::WeightType>(op.getWeight().getType());
  Value weight;
  if (failed(weightBuffer(op, op.getWeight(), weight)))
    return failure();
  bool typedByEdge = weightType.getIndex() == hg::WeightIndex::EdgeType;
  bool typedByNode = weightType.getIndex() == hg::WeightIndex::NodeType;
  bool transpose = op.getTranspose();
  Value result = op.getResult();
  auto resultType = cast<hg::FeatureType>(result.getType());
  hg::Endpoint from = op.getFrom();
  auto gemm = [&](Value lhs, Value out, Value lhsRows, Value segments) {
    return ht::GemmOp::create(builder, loc, lhs, weight, out, lhsRows, Value(),
                              Value(), segments, Value(), Value(), Value(),
                              /*transpose_lhs=*/false, transpose);
  };

  // Node rows, possibly read at an edge endpoint afterwards.
  auto nodeGemm = [&](Value input, Value out) -> LogicalResult {
    Value x;
    if (failed(nodeBuffer(input, x)))
      return failure();
    if (typedByNode)
      ht::GemmOp::create(builder, loc, x, weight, out, graph(NTYPE_PERM),
                         Value(), graph(NTYPE_PERM), graph(NTYPE_OFFSETS),
                         Value(), Value(), Value(), /*transpose_lhs=*/false,
                         transpose);
    else
      gemm(x, out, Value(), Value());
    return success();
  };

  if (from == hg::Endpoint::Node) {
    Value out = destinationFor(result);
    if (failed(nodeGemm(op.getInput(), out)))
      return failure();
    values.nodes[result] = out;
    return success();
  }

  // A linear map read at an edge endpoint has candidate implementations,
  // ranked by preference level: (1) one row per node, read at the endpoint
  // afterwards, whenever the weight does not depend on the edge type (every
  // edge of a node shares its row: the most compact form there is);
  // (2) one row per unique (source, edge type) pair, when the result is
  // compact-materialized; (3) one row per edge.
  if (hg::isStoredPerNode(op)) {
    Value perNode = memref::AllocOp::create(
        builder, loc,
        MemRefType::get({ShapedType::kDynamic, resultType.getWidth()},
                        resultType.getElementType()),
        ValueRange{size(NODE_TYPE)});
    temporaries.push_back(perNode);
    if (failed(nodeGemm(op.getInput(), perNode)))
      return failure();
    values.edges[result] = {perNode, from == hg::Endpoint::Src
                                         ? AccessScheme::Src
                                         : AccessScheme::Dst};
    return storeOutput(result);
  }

  bool compact = hg::isMarkedCompact(op);
  Value lhs, lhsRows, segments;
  if (from == hg::Endpoint::Edge) {
    // Compact input rows give compact result rows (one GEMM row per pair);
    // others are read in place, gathered when they live in a node buffer.
    auto it = values.edges.find(op.getInput());
    compact =
        it != values.edges.end() && it->second.scheme == AccessScheme::Compact;
    if (compact)
      lhs = it->second.memref;
    else if (failed(edgeRows(op.getInput(), lhs, lhsRows)))
      return failure();
    segments = compact ? graph(COMPACT_OFFSETS) : graph(ETYPE_OFFSETS);
  } else {
    if (failed(nodeBuffer(op.getInput(), lhs)))
      return failure();
    lhsRows = compact                     ? graph(COMPACT_SRC)
              : from == hg::Endpoint::Src ? graph(EDGE_SRC)
                                          : graph(EDGE_DST);
    segments = compact ? graph(COMPACT_OFFSETS) : graph(ETYPE_OFFSETS);
  }
  Value out = destinationFor(result, compact);
  ht::GemmOp product =
      gemm(lhs, out, lhsRows, typedByEdge ? segments : Value());
  values.edges[result] = {out,
                          compact ? AccessScheme::Compact : AccessScheme::Edge};
  if (compact && typedByEdge)
    fuseRowDot(op, product);
  return success();
}

/// RGAT's source score `a_r · z_e` with `z` compact-materialized: the dot of
/// a compact typed_linear result with an edge-typed `typed_vector` of one
/// head depends only on the (source, edge type) pair, so the epilogue of the
/// pair GEMM that produces `z` computes it once per pair (row_dot) from the
/// accumulators it holds anyway, and the dot gets compact rows [P, 1] that
/// its consumers read through compact_map like `z` itself. Otherwise the
/// score traversal gathers a whole `z` row per edge for one number per
/// head. With H heads the dot is one per head's block of columns and the
/// rows [P, H]. One dot per GEMM (one epilogue); any other dot stays
/// row-wise.
void FunctionLowering::fuseRowDot(hg::TypedLinearOp op, ht::GemmOp product) {
  Value result = op.getResult();
  auto rowType = cast<hg::FeatureType>(result.getType());
  for (Operation *user : op->getUsers()) {
    auto dot = dyn_cast<hg::DotOp>(user);
    if (!dot || values.edges.count(dot.getResult()))
      continue;
    auto dotType = cast<hg::FeatureType>(dot.getResult().getType());
    if (dotType.getWidth() != rowType.getHeads())
      continue;
    Value other = dot.getLhs() == result ? dot.getRhs() : dot.getLhs();
    auto vector = other.getDefiningOp<hg::TypedVectorOp>();
    if (!vector || other == result)
      continue;
    auto weightType = cast<hg::WeightType>(vector.getWeight().getType());
    if (weightType.getIndex() != hg::WeightIndex::EdgeType)
      continue;
    // The weight must already be in memory (an argument or an earlier
    // result): the GEMM reads it.
    Value a = values.weights.lookup(vector.getWeight());
    auto aType = a ? dyn_cast<MemRefType>(a.getType()) : MemRefType();
    if (!aType || aType.getRank() != 2 ||
        aType.getDimSize(1) != rowType.getWidth())
      continue;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(product);
    Value scores = destinationFor(dot.getResult(), /*compactRows=*/true);
    product.getRowDotMutable().assign(a);
    product.getRowDotIntoMutable().assign(scores);
    values.edges[dot.getResult()] = {scores, AccessScheme::Compact};
    return;
  }
}

//===----------------------------------------------------------------------===//
// Weight gradients
//===----------------------------------------------------------------------===//

/// `dW[k] = Σ_{rows i of type k} x_{F(i)}ᵀ ⊗ dy_i` as one outer-product GEMM:
/// node rows in node-type order for node-typed weights, edge rows in
/// edge-type order for edge-typed ones, every row for a single weight.
LogicalResult FunctionLowering::lowerWeightGrad(hg::WeightGradOp op) {
  if (hg::isWrittenIntoSum(op))
    return success(); // lowered by the sum it feeds (lowerWeightAdd)
  return weightGradGemm(op, weightDestination(op.getResult()),
                        /*accumulate=*/false);
}

/// The GEMM of `op` into `out`, overwriting it or adding to it.
LogicalResult FunctionLowering::weightGradGemm(hg::WeightGradOp op, Value out,
                                               bool accumulate) {
  auto weightType = cast<hg::WeightType>(op.getType());
  hg::Endpoint from = op.getFrom();
  Value x, xRows, dy, dyRows, segments;
  if (from == hg::Endpoint::Node) {
    if (failed(nodeBuffer(op.getInput(), x)) ||
        failed(nodeBuffer(op.getGrad(), dy)))
      return failure();
    if (weightType.getIndex() == hg::WeightIndex::NodeType) {
      xRows = dyRows = graph(NTYPE_PERM);
      segments = graph(NTYPE_OFFSETS);
    }
  } else {
    if (weightType.getIndex() == hg::WeightIndex::NodeType)
      return op.emitError("hgraph-to-htmpl: the gradient of a node-typed "
                          "weight read 'from ")
             << hg::stringifyEndpoint(from)
             << "' is not lowered; aggregate the gradient to the node first "
                "and use 'from node'";
    // Rows are edges in canonical (edge-type-sorted) order. A compact
    // gradient is read through compact_map: its pair row holds the value of
    // every edge of the pair, and each edge counts once in the sum.
    if (from == hg::Endpoint::Edge) {
      if (failed(edgeRows(op.getInput(), x, xRows)))
        return failure();
    } else if (hg::sumsGradPerPair(op)) {
      // Compact: the gradient rows summed per (source, edge type) pair (the
      // expression evaluated per edge, accumulated into its pair's row),
      // then the outer products over the pairs, which are sorted by type.
      if (failed(nodeBuffer(op.getInput(), x)))
        return failure();
      FailureOr<Value> pairs = pairSums(op.getGrad());
      if (failed(pairs))
        return failure();
      ht::GemmOp::create(
          builder, loc, x, *pairs, out, graph(COMPACT_SRC), Value(), Value(),
          graph(COMPACT_OFFSETS), Value(), Value(), Value(),
          /*transpose_lhs=*/true, /*transpose_rhs=*/false, accumulate);
      releasePairSums(op.getGrad());
      return success();
    } else {
      if (failed(nodeBuffer(op.getInput(), x)))
        return failure();
      xRows = graph(from == hg::Endpoint::Src ? EDGE_SRC : EDGE_DST);
    }
    if (failed(edgeRows(op.getGrad(), dy, dyRows)))
      return failure();
    if (weightType.getIndex() == hg::WeightIndex::EdgeType)
      segments = graph(ETYPE_OFFSETS);
  }
  ht::GemmOp::create(builder, loc, x, dy, out, xRows, dyRows, Value(), segments,
                     Value(), Value(), Value(), /*transpose_lhs=*/true,
                     /*transpose_rhs=*/false, accumulate);
  return success();
}

/// A sum of weights (autodiff adds the gradient contributions of a weight
/// used several times): every term goes into the result buffer in turn.
/// Weight gradients and nested sums used only by the sum are not stored on
/// their own: their GEMMs write, then accumulate into, the result; zeros add
/// nothing; other weights are copied, then added.
LogicalResult FunctionLowering::lowerWeightAdd(hg::AddOp op) {
  if (hg::isWrittenIntoSum(op))
    return success(); // part of the enclosing sum
  SmallVector<Value> terms = hg::weightSumTerms(op);
  // A first term written in place (lowerWeightOuterTerm) made the buffer.
  Value out = values.weights.lookup(op.getResult());
  if (!out)
    out = weightDestination(op.getResult());
  if (terms.empty())
    fillWeight(out, Value());
  for (auto [index, term] : llvm::enumerate(terms)) {
    if (index == 0 && values.weights.lookup(term) == out)
      continue;
    auto grad = term.getDefiningOp<hg::WeightGradOp>();
    if (grad && hg::isWrittenIntoSum(grad)) {
      if (failed(weightGradGemm(grad, out, /*accumulate=*/index > 0)))
        return failure();
      continue;
    }
    Value buffer;
    if (failed(weightBuffer(op, term, buffer)))
      return failure();
    fillWeight(out, buffer, /*add=*/index > 0);
  }
  return success();
}

/// A weight outer product that is the first term of a sum of weights
/// (hg::sumWrittenInPlace) is written straight into the sum's buffer (the
/// sum then adds the other terms to it) instead of into a temporary the sum
/// copies: RGAT's `W_r b_r` gradient, a 64x64 slice per type.
LogicalResult FunctionLowering::lowerWeightOuterTerm(hg::WeightOuterOp op) {
  Value destination;
  if (hg::AddOp sum = hg::sumWrittenInPlace(op))
    destination = weightDestination(sum.getResult());
  return lowerWeightOuter(builder, op, values, temporaries, destination);
}

/// `w[k] = Σ_{rows i of type k} x_i`: the rows are accumulated into the slice
/// of their type (zero-filled first) by a traversal.
LogicalResult FunctionLowering::lowerTypeSum(hg::TypeSumOp op) {
  if (hg::ScaleOp scale = typeSumOverPairs(op))
    return lowerTypeSumOverPairs(op, scale);
  Value input = op.getInput();
  auto type = cast<hg::FeatureType>(input.getType());
  auto weightType = cast<hg::WeightType>(op.getType());
  Value out = weightDestination(op.getResult());
  fillWeight(out, Value());
  AccessScheme scheme = weightType.getIndex() == hg::WeightIndex::EdgeType
                            ? AccessScheme::EdgeType
                        : weightType.getIndex() == hg::WeightIndex::NodeType
                            ? AccessScheme::NodeType
                            : AccessScheme::Whole;
  Sink sink{out, scheme, SinkKind::Add};
  return traverse(
      type.isEdgeWise(), {input}, {}, {sink}, type.getHeads(),
      type.getHeadWidth(),
      [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
        return eval.emit(b, input, head, feature);
      });
}

/// `type_sum (scale %s, %c)` into an edge-typed weight, where %c is stored
/// one row per (source, edge type) pair (the ScaleOp, else null): the
/// gradient of a per-type vector dotted with a compact value, RGAT's `a`.
hg::ScaleOp FunctionLowering::typeSumOverPairs(hg::TypeSumOp op) {
  return hg::typeSumOverPairs(
      op, [&](Value value) { return hasCompactRows(value); });
}

/// True when `edgeValue` is stored one row per (source, edge type) pair.
bool FunctionLowering::hasCompactRows(Value edgeValue) {
  auto stored = values.edges.find(edgeValue);
  return stored != values.edges.end() &&
         stored->second.scheme == AccessScheme::Compact;
}

/// Σ_{e of type r} s_e · c_{pair(e)} = Σ_{pairs p of type r} (Σ_{e in p} s_e)
/// · c_p: the scale summed per pair (a scalar per head, in pair order), then
/// one outer-product GEMM over the P pairs (segments: compact_offsets) with
/// the head blocks of the weight as its per-head slices. Each pair's row is
/// read once instead of once per edge.
LogicalResult FunctionLowering::lowerTypeSumOverPairs(hg::TypeSumOp op,
                                                      hg::ScaleOp scale) {
  Value rows = values.edges.lookup(scale.getInput()).memref;
  FailureOr<Value> sums = pairSums(scale.getScale());
  if (failed(sums))
    return failure();
  // The [R, W] weight seen as the GEMM's [R, K, N] (one column of the scale
  // for every head) or, per head, [R, H, 1, W / H] (as many as there are
  // heads): the same memory.
  Value out = weightDestination(op.getResult());
  auto outType = cast<MemRefType>(out.getType());
  int64_t width = outType.getDimSize(1);
  int64_t columns = cast<MemRefType>((*sums).getType()).getDimSize(1);
  SmallVector<int64_t> shape = {ShapedType::kDynamic, 1, width};
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  if (columns > 1) {
    shape = {ShapedType::kDynamic, columns, 1, width / columns};
    groups = {{0}, {1, 2, 3}};
  }
  SmallVector<OpFoldResult> sizes = {
      memref::DimOp::create(builder, loc, out, 0).getResult()};
  for (int64_t extent : ArrayRef<int64_t>(shape).drop_front())
    sizes.push_back(builder.getIndexAttr(extent));
  Value slices = memref::ExpandShapeOp::create(
      builder, loc, MemRefType::get(shape, outType.getElementType()), out,
      groups, sizes);
  ht::GemmOp::create(builder, loc, *sums, rows, slices, Value(), Value(),
                     Value(), graph(COMPACT_OFFSETS), Value(), Value(), Value(),
                     /*transpose_lhs=*/true, /*transpose_rhs=*/false,
                     /*accumulate=*/false);
  releasePairSums(scale.getScale());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions over incoming edges
//===----------------------------------------------------------------------===//

/// `aggregate sum (typed_linear %W, %x from edge [transpose]) to src`
/// (hg::scatteredLinear) as one GEMM that adds each row into its source
/// node atomically (`out` is zero-filled): the per-edge results never reach
/// memory. Where (source, edge type) pairs pay (the function is compacted),
/// the GEMM's rows are the per-pair sums of %x, which neither needs memory
/// then; else the edges, %x read in place. This is the input gradient of a
/// typed_linear read `from src`. (Rows into the destination stay a
/// traversal, whose destination-sorted order lets the warp reduce them
/// before the atomics.)
LogicalResult FunctionLowering::scatterToSources(hg::TypedLinearOp linear,
                                                 Value out) {
  Value weight, x, rows;
  if (failed(weightBuffer(linear, linear.getWeight(), weight)))
    return failure();
  auto weightType = cast<hg::WeightType>(linear.getWeight().getType());
  bool typed = weightType.getIndex() == hg::WeightIndex::EdgeType;
  fill(out, 0.0);
  if (pairsPay) {
    // Σ_{e: src(e) = s} W_{r(e)} x_e = Σ_{pairs (s, r)} W_r (Σ_{e in pair}
    // x_e): the GEMM runs over the P pair sums (shared with the compact weight
    // gradient of the same rows) instead of the E edges.
    FailureOr<Value> pairs = pairSums(linear.getInput());
    if (failed(pairs))
      return failure();
    ht::GemmOp::create(
        builder, loc, *pairs, weight, out, Value(), Value(), graph(COMPACT_SRC),
        typed ? graph(COMPACT_OFFSETS) : Value(), Value(), Value(), Value(),
        /*transpose_lhs=*/false, linear.getTranspose(),
        /*accumulate=*/true, /*atomic=*/true);
    releasePairSums(linear.getInput());
    return success();
  }
  if (failed(edgeRows(linear.getInput(), x, rows)))
    return failure();
  ht::GemmOp::create(builder, loc, x, weight, out, rows, Value(),
                     graph(EDGE_SRC), typed ? graph(ETYPE_OFFSETS) : Value(),
                     Value(), Value(), Value(), /*transpose_lhs=*/false,
                     linear.getTranspose(),
                     /*accumulate=*/true, /*atomic=*/true);
  return success();
}

/// `Σ_{e in pair p} v_e` for every (source, edge type) pair p, [P, width]:
/// the expression of `edgeValue` evaluated per edge and accumulated into its
/// pair's row (through compact_map). Computed once for all its consumers.
FailureOr<Value> FunctionLowering::pairSums(Value edgeValue) {
  auto it = pairSumBuffers.find(edgeValue);
  if (it != pairSumBuffers.end())
    return it->second.first;
  auto type = cast<hg::FeatureType>(edgeValue.getType());
  Value pairs = allocate(edgeValue, /*compactRows=*/true);
  fill(pairs, 0.0);
  if (failed(traverse(
          /*edgeDomain=*/true, {edgeValue}, {},
          {{pairs, AccessScheme::Compact, SinkKind::Add}}, type.getHeads(),
          type.getHeadWidth(),
          [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
            return eval.emit(b, edgeValue, head, feature);
          })))
    return failure();
  unsigned readers =
      hg::pairSumReaders(edgeValue, pairsPay, [&](Value value) {
        return hasCompactRows(value);
      }).size();
  pairSumBuffers[edgeValue] = {pairs, std::max(readers, 1u)};
  return pairs;
}

/// One consumer is done with the pair sums of `edgeValue`; the last one
/// frees them at once rather than at the return, so that later pair sums
/// can reuse the memory.
void FunctionLowering::releasePairSums(Value edgeValue) {
  auto it = pairSumBuffers.find(edgeValue);
  if (it == pairSumBuffers.end() || --it->second.second > 0)
    return;
  Value pairs = it->second.first;
  pairSumBuffers.erase(it);
  llvm::erase(temporaries, pairs);
  memref::DeallocOp::create(builder, loc, pairs);
}

LogicalResult FunctionLowering::lowerAggregate(hg::AggregateOp op) {
  Value input = op.getInput();
  auto type = cast<hg::FeatureType>(input.getType());
  if (auto scale = input.getDefiningOp<hg::ScaleOp>()) {
    auto it = fusedSoftmaxScores.find(scale.getScale());
    if (it != fusedSoftmaxScores.end())
      return lowerSoftmaxAggregate(op, scale, it->second);
  }
  Value out = destinationFor(op.getResult());
  values.nodes[op.getResult()] = out;
  if (hg::TypedLinearOp linear = hg::scatteredLinear(op))
    return scatterToSources(linear, out);
  bool isMax = op.getKind() == hg::Reduction::Max;
  fill(out, isMax ? -std::numeric_limits<double>::infinity() : 0.0);
  Sink sink{out,
            op.getReceiver() == hg::Endpoint::Src ? AccessScheme::Src
                                                  : AccessScheme::Dst,
            isMax ? SinkKind::Max : SinkKind::Add};
  if (failed(traverse(
          /*edgeDomain=*/true, {input}, {}, {sink}, type.getHeads(),
          type.getHeadWidth(),
          [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
            return eval.emit(b, input, head, feature);
          })))
    return failure();

  auto outType = cast<MemRefType>(out.getType());
  Type element = outType.getElementType();
  Sink update{out, AccessScheme::Node, SinkKind::Store};
  if (op.getKind() == hg::Reduction::Mean) {
    // Divide by the in-degree, read from the CSR row pointers.
    Leaf rowPtr{graph(CSR_ROW_PTR), AccessScheme::Whole};
    Leaf self{out, AccessScheme::Node};
    if (failed(traverse(
            /*edgeDomain=*/false, {}, {rowPtr, self}, {update}, 1,
            outType.getDimSize(1),
            [&](OpBuilder &b, RowEvaluator &eval, Value, Value feature) {
              Value node = eval.row(1);
              Value next = arith::AddIOp::create(
                  b, loc, node, arith::ConstantIndexOp::create(b, loc, 1));
              Value begin = memref::LoadOp::create(b, loc, graph(CSR_ROW_PTR),
                                                   ValueRange{node});
              Value end = memref::LoadOp::create(b, loc, graph(CSR_ROW_PTR),
                                                 ValueRange{next});
              Value degree = arith::SubIOp::create(b, loc, end, begin);
              Value one = arith::ConstantIntOp::create(b, loc, 1, 32);
              degree = arith::MaxSIOp::create(b, loc, degree, one);
              Value count = arith::SIToFPOp::create(b, loc, element, degree);
              Value sum = eval.load(b, 1, feature);
              return arith::DivFOp::create(b, loc, sum, count);
            })))
      return failure();
  } else if (isMax) {
    // Nodes without incoming edges get 0, not -inf.
    Leaf self{out, AccessScheme::Node};
    if (failed(traverse(
            /*edgeDomain=*/false, {}, {self}, {update}, 1,
            outType.getDimSize(1),
            [&](OpBuilder &b, RowEvaluator &eval, Value, Value feature) {
              Value value = eval.load(b, 0, feature);
              Value lowest = arith::ConstantOp::create(
                  b, loc,
                  b.getFloatAttr(element,
                                 -std::numeric_limits<double>::infinity()));
              Value empty = arith::CmpFOp::create(
                  b, loc, arith::CmpFPredicate::OEQ, value, lowest);
              Value zero = arith::ConstantOp::create(
                  b, loc, b.getFloatAttr(element, 0.0));
              return arith::SelectOp::create(b, loc, empty, zero, value);
            })))
      return failure();
  }
  values.nodes[op.getResult()] = out;
  return success();
}

/// Edge softmax as the scores (stored by an edge traversal, unless they are
/// in memory already) and one node traversal that reduces them per
/// destination: the warp of node t walks t's CSR row twice, its lanes
/// splitting the slots, for the maximum and then the sum of exp(score -
/// max); both stay in registers and are stored once per node. No fills and
/// no atomics; the normalisation is evaluated by the consumers.
LogicalResult FunctionLowering::lowerEdgeSoftmax(hg::EdgeSoftmaxOp op) {
  if (splitSoftmax)
    return lowerEdgeSoftmaxSplit(op);
  Value input = op.getInput();
  auto type = cast<hg::FeatureType>(input.getType());
  Type element = type.getElementType();
  Value score = storedPerEdge(input);
  if (!score) {
    // Into the scores' output where they are returned (saved for the
    // backward), else a buffer of their own.
    score = destinationFor(input);
    if (failed(store(input, score, /*edgeDomain=*/true)))
      return failure();
  }
  if (fusedAggregateOf(op)) {
    fusedSoftmaxScores[op.getResult()] = score;
    return success();
  }
  hg::FeatureType scratch = hg::softmaxNodeScratch(op);
  Value max = allocateNodeRows(scratch), sum = allocateNodeRows(scratch);

  MLIRContext *ctx = builder.getContext();
  auto whole = ht::AccessSchemeAttr::get(ctx, AccessScheme::Whole);
  auto node = ht::AccessSchemeAttr::get(ctx, AccessScheme::Node);
  Value rowPtr = graph(CSR_ROW_PTR), edgeIds = graph(CSR_EID);
  auto traversal = ht::TraversalOp::create(
      builder, loc, ValueRange{}, Value(), Value(),
      ValueRange{score, rowPtr, edgeIds}, ValueRange{max, sum},
      ht::Domain::Nodes, ht::Adjacency::None,
      builder.getArrayAttr({whole, whole, whole, node, node}));

  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&traversal.getBody());
  for (int i = 0; i < 6; ++i)
    body->addArgument(builder.getIndexType(), loc);
  Value id = body->getArgument(0), maxRow = body->getArgument(4),
        sumRow = body->getArgument(5);
  Value zero = constIndex(builder, loc, 0), one = constIndex(builder, loc, 1);
  Value begin = loadIndex(builder, loc, rowPtr, id);
  Value end = loadIndex(builder, loc, rowPtr,
                        arith::AddIOp::create(builder, loc, id, one));
  auto constFloat = [&](OpBuilder &b, double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(element, v));
  };

  // The walks for a group of columns: one loop for the maxima, one for the
  // sums, each column an iter_arg with one combining op, so that the warp
  // splits the slots over its lanes and finishes every column with
  // shuffles. One edge id load serves every column of the group.
  auto walks = [&](OpBuilder &b, ArrayRef<Value> columns) {
    auto reduce =
        [&](double init,
            function_ref<Value(OpBuilder &, Value, Value, size_t)> step) {
          SmallVector<Value> inits(columns.size(), constFloat(b, init));
          auto loop = scf::ForOp::create(
              b, loc, begin, end, one, inits,
              [&](OpBuilder &e, Location, Value slot, ValueRange acc) {
                Value edge = loadIndex(e, loc, edgeIds, slot);
                SmallVector<Value> next;
                for (auto [i, column] : llvm::enumerate(columns)) {
                  Value x = memref::LoadOp::create(e, loc, score,
                                                   ValueRange{edge, column});
                  next.push_back(step(e, acc[i], x, i));
                }
                scf::YieldOp::create(e, loc, next);
              });
          return SmallVector<Value>(loop.getResults());
        };
    SmallVector<Value> rowMax =
        reduce(-std::numeric_limits<double>::infinity(),
               [&](OpBuilder &e, Value acc, Value x, size_t) -> Value {
                 return arith::MaximumFOp::create(e, loc, acc, x);
               });
    SmallVector<Value> rowSum =
        reduce(0.0, [&](OpBuilder &e, Value acc, Value x, size_t i) -> Value {
          Value shifted = arith::SubFOp::create(e, loc, x, rowMax[i]);
          Value term = math::ExpOp::create(e, loc, shifted);
          return arith::AddFOp::create(e, loc, acc, term);
        });
    for (auto [i, column] : llvm::enumerate(columns)) {
      memref::StoreOp::create(b, loc, rowMax[i], max,
                              ValueRange{maxRow, column});
      memref::StoreOp::create(b, loc, rowSum[i], sum,
                              ValueRange{sumRow, column});
    }
  };
  // Per-head scores (a few columns) share their walks; wider softmaxes walk
  // once per column, keeping the registers per lane bounded.
  constexpr int64_t kColumnsPerWalk = 8;
  int64_t width = type.getWidth();
  if (width <= kColumnsPerWalk) {
    SmallVector<Value> columns;
    for (int64_t c = 0; c < width; ++c)
      columns.push_back(constIndex(builder, loc, c));
    walks(builder, columns);
  } else {
    scf::ForOp::create(builder, loc, zero, constIndex(builder, loc, width), one,
                       ValueRange{},
                       [&](OpBuilder &b, Location, Value column, ValueRange) {
                         walks(b, {column});
                         scf::YieldOp::create(b, loc);
                       });
  }
  ht::YieldOp::create(builder, loc);
  builder.setInsertionPointAfter(traversal);

  return finishEdgeSoftmax(op, score, max, sum);
}

/// The aggregation that consumes an edge_softmax as RGAT's and HGT's
/// `aggregate sum (scale α z) to dst` does, when that is α's only use and
/// the scale's only use, with one α column per head of `z`: then the two
/// lower together to one htmpl.softmax_aggregate, which walks each
/// destination's CSR row once (online softmax) and never stores α. Null
/// otherwise (α returned or saved for a backward, read by other ops, the
/// split form, a by_type softmax), and the softmax lowers as before.
hg::AggregateOp FunctionLowering::fusedAggregateOf(hg::EdgeSoftmaxOp op) {
  Value alpha = op.getResult();
  if (splitSoftmax || !fuseSoftmaxAggregate || op.getByType() ||
      !alpha.hasOneUse() || storedRows.contains(alpha))
    return {};
  auto scale = dyn_cast<hg::ScaleOp>(*alpha.getUsers().begin());
  if (!scale || scale.getScale() != alpha || scale.getInput() == alpha ||
      !scale.getResult().hasOneUse() || storedRows.contains(scale.getResult()))
    return {};
  auto aggregate = dyn_cast<hg::AggregateOp>(*scale->getUsers().begin());
  if (!aggregate || aggregate.getKind() != hg::Reduction::Sum ||
      aggregate.getReceiver() != hg::Endpoint::Dst)
    return {};
  auto alphaType = cast<hg::FeatureType>(alpha.getType());
  auto valueType = cast<hg::FeatureType>(scale.getInput().getType());
  if (alphaType.getWidth() != valueType.getHeads() ||
      alphaType.getElementType() != valueType.getElementType())
    return {};
  return aggregate;
}

/// `aggregate sum (scale (edge_softmax s) z)` (fusedAggregateOf) as one
/// htmpl.softmax_aggregate over the stored scores and the rows of `z`. It
/// writes every row of its output, so there is no fill.
LogicalResult FunctionLowering::lowerSoftmaxAggregate(hg::AggregateOp op,
                                                      hg::ScaleOp scale,
                                                      Value scores) {
  // z's rows: per edge, per pair (compact_map), or a node's (a gather from
  // an endpoint reads the node rows through edge_src / edge_dst); anything
  // else is stored per edge first.
  Value z = scale.getInput(), buffer, rows;
  auto known = values.edges.find(z);
  bool byRow =
      known == values.edges.end() ||
      llvm::is_contained({AccessScheme::Edge, AccessScheme::Compact,
                          AccessScheme::Src, AccessScheme::Dst},
                         known->second.scheme);
  if (byRow) {
    if (failed(edgeRows(z, buffer, rows)))
      return failure();
  } else {
    Leaf leaf;
    if (failed(edgeLeaf(z, leaf)))
      return failure();
    buffer = leaf.memref;
    if (leaf.scheme == AccessScheme::Compact)
      rows = graph(COMPACT_MAP);
  }
  Value out = destinationFor(op.getResult());
  ht::SoftmaxAggregateOp::create(builder, loc, graph(CSR_ROW_PTR),
                                 graph(CSR_EID), scores, buffer, rows, out);
  values.nodes[op.getResult()] = out;
  fusedSoftmaxScores.erase(scale.getScale());
  return success();
}

/// Stores the normalised value exp(score - max[dst]) / sum[dst] of a lowered
/// edge_softmax once per edge, into its output where it is returned (a saved
/// α) and else into a buffer of its own, and lets its consumers read it
/// there. Evaluated by the consumers instead, every lane of a traversal's
/// lane group would compute the α of all heads of its edge (three loads, an
/// exp and a division per head) before its features: one pass that stores
/// α was faster on the H100 with one head too (docs/performance.md).
LogicalResult FunctionLowering::finishEdgeSoftmax(hg::EdgeSoftmaxOp op,
                                                  Value score, Value max,
                                                  Value sum) {
  Value result = op.getResult();
  values.softmaxes[result] = {score, max, sum};
  Value normalised = destinationFor(result);
  if (failed(store(result, normalised, /*edgeDomain=*/true)))
    return failure();
  values.softmaxes.erase(result);
  values.edges[result] = {normalised, AccessScheme::Edge};
  return success();
}

/// Edge softmax in two edge traversals (`split-softmax`): the scores and their
/// per-destination maximum, then the per-destination sum of exp(score - max).
LogicalResult FunctionLowering::lowerEdgeSoftmaxSplit(hg::EdgeSoftmaxOp op) {
  Value input = op.getInput();
  auto type = cast<hg::FeatureType>(input.getType());
  int64_t heads = type.getHeads(), headWidth = type.getHeadWidth();
  // Pass 1: store the scores (unless they are in memory already) and reduce
  // their per-destination maximum.
  SmallVector<Sink, 2> sinks;
  Value score = storedPerEdge(input);
  if (!score) {
    score = destinationFor(input);
    sinks.push_back({score, AccessScheme::Edge, SinkKind::Store});
  }
  hg::FeatureType scratch = hg::softmaxNodeScratch(op);
  Value max = allocateNodeRows(scratch), sum = allocateNodeRows(scratch);
  fill(max, -std::numeric_limits<double>::infinity());
  fill(sum, 0.0);
  sinks.push_back({max, AccessScheme::Dst, SinkKind::Max});
  if (failed(traverse(
          /*edgeDomain=*/true, {input}, {}, sinks, heads, headWidth,
          [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
            return eval.emit(b, input, head, feature);
          })))
    return failure();
  // Pass 2: the per-destination sum of exp(score - max).
  Leaf scoreLeaf{score, AccessScheme::Edge}, maxLeaf{max, AccessScheme::Dst};
  if (failed(traverse(
          /*edgeDomain=*/true, {}, {scoreLeaf, maxLeaf},
          {{sum, AccessScheme::Dst, SinkKind::Add}}, heads, headWidth,
          [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
            Value column = RowEvaluator::column(b, type, head, feature);
            Value shifted = arith::SubFOp::create(
                b, loc, eval.load(b, 0, column), eval.load(b, 1, column));
            return math::ExpOp::create(b, loc, shifted);
          })))
    return failure();
  return finishEdgeSoftmax(op, score, max, sum);
}

/// An `edge_softmax ... by_type` or a `group_sum`: the input stored per edge
/// (unless it is in memory already), then one node traversal over the
/// (destination, edge type) groups writes the result (TypeGroups.h).
LogicalResult FunctionLowering::lowerTypeGroups(Value input, Value result,
                                                TypeGroupResult kind) {
  Value stored = storedPerEdge(input);
  if (!stored) {
    stored = destinationFor(input);
    if (failed(store(input, stored, /*edgeDomain=*/true)))
      return failure();
  }
  Value out = destinationFor(result);
  emitTypeGroupWalk(
      builder, loc, kind, stored, out,
      cast<hg::FeatureType>(result.getType()).getWidth(),
      {graph(CSR_ROW_PTR), graph(CSR_EID), graph(CSR_ETYPE), graph(NODE_TYPE)});
  values.edges[result] = {out, AccessScheme::Edge};
  return success();
}

LogicalResult FunctionLowering::lowerConcat(hg::ConcatOp op) {
  auto type = cast<hg::FeatureType>(op.getType());
  bool edgeDomain = type.isEdgeWise();
  Value out = destinationFor(op.getResult());
  // Operand k fills columns [offset, offset + width_k) of every head block.
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    auto inType = cast<hg::FeatureType>(input.getType());
    Sink sink{out, edgeDomain ? AccessScheme::Edge : AccessScheme::Node,
              SinkKind::Store, type.getHeadWidth(), offset};
    if (failed(traverse(
            edgeDomain, {input}, {}, {sink}, inType.getHeads(),
            inType.getHeadWidth(),
            [&](OpBuilder &b, RowEvaluator &eval, Value head, Value feature) {
              return eval.emit(b, input, head, feature);
            })))
      return failure();
    offset += inType.getHeadWidth();
  }
  if (edgeDomain)
    values.edges[op.getResult()] = {out, AccessScheme::Edge};
  else
    values.nodes[op.getResult()] = out;
  return success();
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::lowerReturn(hg::ReturnOp op) {
  Block &entry = target.getBody().front();
  auto isBuffered = [](Value value) {
    return !isa<hg::StoredType>(value.getType());
  };
  unsigned next = entry.getNumArguments() -
                  llvm::count_if(op.getOperands(), isBuffered);
  for (Value value : op.getOperands()) {
    if (!isBuffered(value))
      continue;
    Value output = entry.getArgument(next++);
    if (written.contains(output))
      continue; // already written in place
    if (isa<hg::WeightType>(value.getType())) {
      // A weight argument, or a weight result returned twice: copied.
      Value buffer;
      if (failed(weightBuffer(op, value, buffer)))
        return failure();
      fillWeight(output, buffer);
      continue;
    }
    auto type = cast<hg::FeatureType>(value.getType());
    if (failed(store(value, output, type.isEdgeWise())))
      return failure();
  }
  func::ReturnOp::create(builder, loc);
  freeTemporariesAfterLastUse();
  if (!offloaded.empty())
    target->setAttr("hector.offload", builder.getArrayAttr(offloaded));
  return success();
}

//===----------------------------------------------------------------------===//
// Offload: evicted and prefetched values
//===----------------------------------------------------------------------===//

/// The last op of the body that reads `value`'s memory: row-wise readers
/// are evaluated inside their own readers' traversals, so those count.
Operation *FunctionLowering::lastMemoryRead(Value value) {
  Block &body = source.getBody().front();
  Operation *last = value.getDefiningOp();
  for (Operation *user : value.getUsers()) {
    Operation *reader = body.findAncestorOpInBlock(*user);
    if (!last || last->isBeforeInBlock(reader))
      last = reader;
    if (hg::isRowWise(reader) || isa<hg::GatherOp>(reader))
      for (Value result : reader->getResults())
        if (Operation *later = lastMemoryRead(result);
            later && last->isBeforeInBlock(later))
          last = later;
  }
  return last;
}

/// Frees the temporary `buffer` once `op` is lowered (at once when `op` is
/// null).
void FunctionLowering::releaseAfter(Operation *op, Value buffer) {
  auto it = llvm::find(temporaries, buffer);
  if (it == temporaries.end() || isa_and_nonnull<hg::ReturnOp>(op))
    return; // the caller's (an argument, an output), or freed at the return
  temporaries.erase(it);
  if (!op)
    memref::DeallocOp::create(builder, loc, buffer);
  else
    freeAfterOp[op].push_back(buffer);
}

void FunctionLowering::freeAfter(Operation *op) {
  auto it = freeAfterOp.find(op);
  if (it == freeAfterOp.end())
    return;
  for (Value buffer : it->second)
    memref::DeallocOp::create(builder, loc, buffer);
  freeAfterOp.erase(it);
}

DictionaryAttr FunctionLowering::offloadEntry(StringRef name,
                                              StringRef direction, int64_t slot,
                                              StringRef tier,
                                              Value hgraphValue,
                                              bool compactRows) {
  SmallVector<NamedAttribute> entries = {
      builder.getNamedAttr("name", builder.getStringAttr(name)),
      builder.getNamedAttr("direction", builder.getStringAttr(direction)),
      builder.getNamedAttr("slot", builder.getI64IntegerAttr(slot)),
      builder.getNamedAttr(
          "shape", builder.getArrayAttr(
                       shapeSymbols(hgraphValue.getType(), compactRows)))};
  if (!tier.empty())
    entries.push_back(
        builder.getNamedAttr("tier", builder.getStringAttr(tier)));
  return builder.getDictionaryAttr(entries);
}

/// Calls the runtime (hector/offload.h): `hector_offload_evict(slot, tier,
/// data, bytes)` or `hector_offload_prefetch(slot, data, bytes)` on the rows
/// of `buffer`.
void FunctionLowering::callOffload(StringRef function, int64_t slot,
                                   std::optional<hg::OffloadTier> tier,
                                   Value buffer) {
  MLIRContext *ctx = builder.getContext();
  Type i32 = builder.getI32Type(), i64 = builder.getI64Type();
  Type pointer = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> argTypes = {i64};
  if (tier)
    argTypes.push_back(i32);
  argTypes.append({pointer, i64});
  auto module = target->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol<func::FuncOp>(function)) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto decl = func::FuncOp::create(builder, loc, function,
                                     builder.getFunctionType(argTypes, {}));
    decl.setPrivate();
  }
  auto type = cast<MemRefType>(buffer.getType());
  int64_t rowBytes = type.getDimSize(1) * type.getElementTypeBitWidth() / 8;
  Value rows = memref::DimOp::create(builder, loc, buffer, 0);
  Value bytes = arith::MulIOp::create(
      builder, loc, rows, arith::ConstantIndexOp::create(builder, loc, rowBytes));
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer);
  SmallVector<Value> args = {
      arith::ConstantIntOp::create(builder, loc, i64, slot)};
  if (tier)
    args.push_back(arith::ConstantIntOp::create(
        builder, loc, i32, static_cast<int64_t>(*tier)));
  Value addressBits = arith::IndexCastOp::create(builder, loc, i64, address);
  args.push_back(LLVM::IntToPtrOp::create(builder, loc, pointer, addressBits));
  args.push_back(arith::IndexCastOp::create(builder, loc, i64, bytes));
  func::CallOp::create(builder, loc, function, TypeRange{}, args);
}

/// The value's rows go to the tensor cache; its buffer is freed once the
/// last traversal that reads it is lowered.
LogicalResult FunctionLowering::lowerEvict(hg::EvictOp op) {
  Value value = op.getValue();
  auto type = cast<hg::FeatureType>(value.getType());
  Value buffer;
  bool compact = false;
  if (!type.isEdgeWise()) {
    if (failed(nodeBuffer(value, buffer)))
      return failure();
  } else {
    Leaf leaf;
    if (failed(edgeLeaf(value, leaf)))
      return failure();
    buffer = leaf.memref;
    compact = leaf.scheme == AccessScheme::Compact;
  }
  // The manifest names the value by the result that returns it.
  auto ret = cast<hg::ReturnOp>(source.getBody().front().getTerminator());
  std::string name;
  for (OpOperand &use : op.getResult().getUses())
    if (use.getOwner() == ret)
      name = storedResultNames[use.getOperandNumber()];
  callOffload("hector_offload_evict", op.getSlot(), op.getTier(), buffer);
  offloaded.push_back(offloadEntry(name, "evict", op.getSlot(),
                                   hg::stringifyOffloadTier(op.getTier()),
                                   value, compact));
  Operation *last = lastMemoryRead(value);
  releaseAfter(last && op->isBeforeInBlock(last) ? last : nullptr, buffer);
  return success();
}

/// A buffer for the value, filled from the tensor cache; freed once its
/// last reader is lowered.
LogicalResult FunctionLowering::lowerPrefetch(hg::PrefetchOp op) {
  Value stored = op.getStored();
  bool compact = storedCompact.lookup(stored);
  Value buffer = allocate(op.getResult(), compact);
  callOffload("hector_offload_prefetch", op.getSlot(), std::nullopt, buffer);
  offloaded.push_back(offloadEntry(storedNames.lookup(stored), "prefetch",
                                   op.getSlot(), "", op.getResult(), compact));
  if (cast<hg::FeatureType>(op.getType()).isEdgeWise())
    values.edges[op.getResult()] = {buffer, compact ? AccessScheme::Compact
                                                    : AccessScheme::Edge};
  else
    values.nodes[op.getResult()] = buffer;
  if (Operation *last = lastMemoryRead(op.getResult()); last && last != op)
    releaseAfter(last, buffer);
  // The copy may still run (a GPU copy stream): its first reader waits.
  Block &body = source.getBody().front();
  Operation *first = nullptr;
  for (Operation *user : op.getResult().getUsers()) {
    Operation *reader = body.findAncestorOpInBlock(*user);
    if (!first || reader->isBeforeInBlock(first))
      first = reader;
  }
  if (first)
    waitBeforeOp[first].push_back(op.getSlot());
  return success();
}

/// Frees each remaining temporary right after the last operation of the
/// entry block that uses it (through views too), instead of at the return:
/// a deep model's step then holds one layer's temporaries at a time, not
/// all of them.
void FunctionLowering::freeTemporariesAfterLastUse() {
  Block &entry = target.getBody().front();
  for (Value memref : temporaries) {
    Operation *last = memref.getDefiningOp();
    SmallVector<Value> work = {memref};
    while (!work.empty()) {
      Value value = work.pop_back_val();
      for (Operation *user : value.getUsers()) {
        Operation *top = entry.findAncestorOpInBlock(*user);
        if (top && last->isBeforeInBlock(top))
          last = top;
        if (isa<ViewLikeOpInterface>(user))
          llvm::append_range(work, user->getResults());
      }
    }
    OpBuilder::InsertionGuard guard(builder);
    if (last->hasTrait<OpTrait::IsTerminator>())
      builder.setInsertionPoint(last);
    else
      builder.setInsertionPointAfter(last);
    memref::DeallocOp::create(builder, loc, memref);
  }
  temporaries.clear();
}

/// Calls hector_offload_wait(slot) for the prefetches whose first reader
/// is `op`.
void FunctionLowering::waitBefore(Operation *op) {
  auto it = waitBeforeOp.find(op);
  if (it == waitBeforeOp.end())
    return;
  StringRef function = "hector_offload_wait";
  auto module = target->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol<func::FuncOp>(function)) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(builder, loc, function,
                         builder.getFunctionType({builder.getI64Type()}, {}))
        .setPrivate();
  }
  for (int64_t slot : it->second)
    func::CallOp::create(
        builder, loc, function, TypeRange{},
        ValueRange{arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), slot)});
  waitBeforeOp.erase(it);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// Rejects feature widths and weight dimensions above kMaxCompiledWidth, at
/// the argument or op that has them.
LogicalResult FunctionLowering::checkWidths() {
  auto check = [&](Type type, Location where) -> LogicalResult {
    int64_t widest = 0;
    StringRef what;
    if (auto feature = dyn_cast<hg::FeatureType>(type)) {
      widest = feature.getWidth();
      what = "feature width";
    } else if (auto weight = dyn_cast<hg::WeightType>(type)) {
      widest = *llvm::max_element(weight.getShape());
      what = "weight dimension";
    }
    if (widest <= kMaxCompiledWidth)
      return success();
    return mlir::emitError(where)
           << "hgraph-to-htmpl: " << what << " " << widest << " exceeds "
           << kMaxCompiledWidth
           << ", the largest Hector compiles (docs/compilation.md#limits)";
  };
  for (BlockArgument arg : source.getArguments())
    if (failed(check(arg.getType(), arg.getLoc())))
      return failure();
  for (Operation &op : source.getBody().front())
    for (Value result : op.getResults())
      if (failed(check(result.getType(), op.getLoc())))
        return failure();
  return success();
}

/// Stores a row-wise value planned to be stored (hg::rowsStoredByFusion)
/// right after its definition; its readers then read it as a leaf.
LogicalResult FunctionLowering::storeRows(Value value) {
  if (cast<hg::FeatureType>(value.getType()).isEdgeWise()) {
    Leaf leaf;
    return edgeLeaf(value, leaf);
  }
  Value buffer;
  return nodeBuffer(value, buffer);
}

LogicalResult FunctionLowering::lower(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](hg::TypedLinearOp typed) { return lowerTypedLinear(typed); })
      .Case(
          [&](hg::AggregateOp aggregate) { return lowerAggregate(aggregate); })
      .Case([&](hg::EdgeSoftmaxOp softmax) {
        return softmax.getByType()
                   ? lowerTypeGroups(softmax.getInput(), softmax.getResult(),
                                     TypeGroupResult::Softmax)
                   : lowerEdgeSoftmax(softmax);
      })
      .Case([&](hg::GroupSumOp sum) {
        return lowerTypeGroups(sum.getInput(), sum.getResult(),
                               TypeGroupResult::Sum);
      })
      .Case([&](hg::WeightGradOp grad) { return lowerWeightGrad(grad); })
      .Case([&](hg::TypeSumOp sum) { return lowerTypeSum(sum); })
      .Case([&](hg::AddOp add) {
        // Sums of rows are row-wise.
        return isa<hg::WeightType>(add.getType()) ? lowerWeightAdd(add)
                                                  : success();
      })
      .Case([&](hg::ZerosOp zeros) {
        // Weights of zeros are filled, unless only sums read them (they add
        // nothing there); feature values are row-wise.
        Value buffer;
        bool onlySummed = llvm::all_of(zeros->getUsers(), [](Operation *user) {
          return isa<hg::AddOp>(user);
        });
        if (isa<hg::WeightType>(zeros.getType()) && !onlySummed)
          return weightBuffer(zeros, zeros.getResult(), buffer);
        return success();
      })
      .Case([&](hg::ConcatOp concat) { return lowerConcat(concat); })
      .Case([&](hg::ReturnOp ret) { return lowerReturn(ret); })
      .Case([&](hg::EvictOp evict) { return lowerEvict(evict); })
      .Case([&](hg::PrefetchOp prefetch) { return lowerPrefetch(prefetch); })
      .Case([&](hg::WeightOuterOp outer) { return lowerWeightOuterTerm(outer); })
      .Case([&](hg::WeightProductOp product) {
        return lowerWeightProduct(builder, product, values,
                                  {graph(NODE_TYPE), graph(EDGE_SRC),
                                   graph(EDGE_DST), graph(ETYPE_OFFSETS)},
                                  temporaries);
      })
      // Row-wise ops are evaluated inside their consumers' traversals,
      // except narrow reductions that several consumers share
      // (hg::isSharedScore).
      .Default([&](Operation *other) {
        Leaf leaf;
        if (other->getNumResults() == 1 &&
            !values.edges.count(other->getResult(0)) &&
            hg::isSharedScore(other->getResult(0), [&](Value value) {
              return values.edges.count(value) != 0;
            }))
          return edgeLeaf(other->getResult(0), leaf);
        return success();
      });
}

LogicalResult FunctionLowering::run() {
  if (failed(checkWidths()) || failed(createEntryPoint()))
    return failure();
  pairsPay = hg::pairsPay(source);
  storedRows = hg::rowsStoredByFusion(source);
  for (Operation &op : source.getBody().front()) {
    waitBefore(&op);
    if (failed(lower(&op)))
      return failure();
    freeAfter(&op);
    if (op.getNumResults() == 1 && storedRows.contains(op.getResult(0)) &&
        failed(storeRows(op.getResult(0))))
      return failure();
  }

  // Keep only the graph arrays the body reads.
  llvm::BitVector unused(target.getNumArguments());
  for (unsigned i = 0; i < NumGraphArrays; ++i)
    if (graphArgs[i].use_empty())
      unused.set(i);
  if (failed(target.eraseArguments(unused)))
    return target.emitError("hgraph-to-htmpl: could not drop unused graph "
                            "arrays");
  source.erase();
  return success();
}

struct HGraphToHTmplPass
    : public hector::impl::HGraphToHTmplBase<HGraphToHTmplPass> {
  using HGraphToHTmplBase::HGraphToHTmplBase;
  void runOnOperation() override {
    SmallVector<hg::FuncOp> functions(getOperation().getOps<hg::FuncOp>());
    for (hg::FuncOp function : functions)
      if (failed(FunctionLowering(function, splitSoftmax, fuseSoftmaxAggregate)
                     .run()))
        return signalPassFailure();
  }
};

} // namespace
