//===- HGraphToHTmpl.cpp - hgraph to htmpl template instances ---*- C++ -*-===//
//
// Lowers each hgraph.func to a func.func entry point over memrefs (the ABI of
// docs/compilation.md) whose body is a sequence of htmpl instances:
//
// 1. GEMM first: every typed_linear becomes one htmpl.gemm (gathering its
//    input rows, one weight slice per type segment, compact rows when the
//    result is compact-materialized).
// 2. Fused traversals next: row-wise ops (element-wise math, dot, scale,
//    gather, typed_vector, relation_norm) are never stored; they are
//    evaluated inside the traversal of the op that consumes them
//    (aggregate, edge_softmax, a stored result), with per-head values hoisted
//    out of the feature loop.
// 3. Fallback: a value that must reach memory and has no GEMM or reduction
//    producer is stored by a plain traversal.
//
//===----------------------------------------------------------------------===//

#include "RowEvaluator.h"

#include "hector/Conversion/Passes.h"
#include "hector/Dialect/HGraph/IR/HGraph.h"
#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace hector {
#define GEN_PASS_DEF_HGRAPHTOHTMPL
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using namespace hector::lowering;
namespace hg = hector::hgraph;
namespace ht = hector::htmpl;
using ht::AccessScheme;

namespace {

//===----------------------------------------------------------------------===//
// The graph arrays of the ABI, in argument order.
//===----------------------------------------------------------------------===//

enum GraphArray : unsigned {
  NodeType,
  EdgeSrc,
  EdgeDst,
  EdgeTypeArray,
  EtypeOffsets,
  EdgeNorm,
  CsrRowPtr,
  CsrSrc,
  CsrEid,
  CsrEtype,
  NtypePerm,
  NtypeOffsets,
  CompactSrc,
  CompactOffsets,
  CompactMap,
  NumGraphArrays
};

struct GraphArrayInfo {
  const char *name;
  const char *size;
  bool isFloat;
};

constexpr GraphArrayInfo kGraphArrays[NumGraphArrays] = {
    {"node_type", "N", false},       {"edge_src", "E", false},
    {"edge_dst", "E", false},        {"edge_type", "E", false},
    {"etype_offsets", "R+1", false}, {"edge_norm", "E", true},
    {"csr_row_ptr", "N+1", false},   {"csr_src", "E", false},
    {"csr_eid", "E", false},         {"csr_etype", "E", false},
    {"ntype_perm", "N", false},      {"ntype_offsets", "T+1", false},
    {"compact_src", "P", false},     {"compact_offsets", "R+1", false},
    {"compact_map", "E", false}};

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

bool isCompact(Operation *op) {
  auto attr = op->getAttrOfType<hg::MaterializationAttr>(
      hg::HGraphDialect::getMaterializationAttrName());
  return attr && attr.getValue() == hg::Materialization::Compact;
}

//===----------------------------------------------------------------------===//
// FunctionLowering: one hgraph.func.
//===----------------------------------------------------------------------===//

class FunctionLowering {
public:
  FunctionLowering(hg::FuncOp source)
      : source(source), builder(source.getContext()), loc(source.getLoc()) {}

  LogicalResult run();

private:
  // Entry point and arguments.
  void createEntryPoint();
  Type memrefFor(Type hgraphType, int64_t leading = ShapedType::kDynamic);
  DictionaryAttr argAttr(StringRef role, StringRef name,
                         ArrayRef<Attribute> shape);
  SmallVector<Attribute> shapeSymbols(Type hgraphType);

  // Sizes and temporaries.
  Value graph(GraphArray array) { return graphArgs[array]; }
  Value size(GraphArray array);
  Value allocate(Value hgraphValue, bool compactRows = false);
  Value destinationFor(Value hgraphValue, bool compactRows = false);

  // Lowering of the ops that produce memory.
  LogicalResult lower(Operation *op);
  LogicalResult lowerTypedLinear(hg::TypedLinearOp op);
  LogicalResult lowerAggregate(hg::AggregateOp op);
  LogicalResult lowerEdgeSoftmax(hg::EdgeSoftmaxOp op);
  LogicalResult lowerConcat(hg::ConcatOp op);
  LogicalResult lowerReturn(hg::ReturnOp op);
  LogicalResult nodeBuffer(Value value, Value &buffer);
  LogicalResult edgeLeaf(Value value, Leaf &leaf);
  LogicalResult store(Value value, Value destination, bool edgeDomain);

  // Traversal construction.
  using Compute = function_ref<Value(OpBuilder &, RowEvaluator &, Value head,
                                     Value feature)>;
  LogicalResult traverse(bool edgeDomain, ArrayRef<Value> roots,
                         ArrayRef<Leaf> extraInputs, ArrayRef<Sink> sinks,
                         int64_t heads, int64_t headWidth, Compute compute);
  void fill(Value memref, double value);
  LogicalResult unreadable(Value value);

  hg::FuncOp source;
  OpBuilder builder;
  Location loc;
  func::FuncOp target;
  SmallVector<Value> graphArgs;
  DenseMap<unsigned, Value> sizes;
  ValueStore values;
  /// hgraph values returned by the function: their output buffers.
  DenseMap<Value, Value> outputs;
  SmallVector<Value> temporaries;
};

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

Type FunctionLowering::memrefFor(Type hgraphType, int64_t leading) {
  if (auto feature = dyn_cast<hg::FeatureType>(hgraphType))
    return MemRefType::get({leading, feature.getWidth()},
                           feature.getElementType());
  auto weight = cast<hg::WeightType>(hgraphType);
  SmallVector<int64_t> shape;
  if (weight.getIndex() != hg::WeightIndex::Single)
    shape.push_back(ShapedType::kDynamic);
  llvm::append_range(shape, weight.getShape());
  return MemRefType::get(shape, weight.getElementType());
}

SmallVector<Attribute> FunctionLowering::shapeSymbols(Type hgraphType) {
  SmallVector<Attribute> shape;
  if (auto feature = dyn_cast<hg::FeatureType>(hgraphType)) {
    shape.push_back(builder.getStringAttr(feature.isEdgeWise() ? "E" : "N"));
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

void FunctionLowering::createEntryPoint() {
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
  for (auto [index, arg] : llvm::enumerate(source.getArguments())) {
    if (isa<hg::GraphType>(arg.getType()))
      continue;
    std::string name = ("arg" + Twine(index)).str();
    if (auto named = source.getArgAttrOfType<StringAttr>(index, "hgraph.name"))
      name = named.str();
    types.push_back(memrefFor(arg.getType()));
    attrs.push_back(argAttr(isa<hg::WeightType>(arg.getType()) ? "weight"
                                                                : "input",
                            name, shapeSymbols(arg.getType())));
  }
  for (auto [index, type] : llvm::enumerate(source.getResultTypes())) {
    types.push_back(memrefFor(type));
    attrs.push_back(argAttr("output", ("result" + Twine(index)).str(),
                            shapeSymbols(type)));
  }

  builder.setInsertionPoint(source);
  target = func::FuncOp::create(builder, loc, source.getSymName(),
                                builder.getFunctionType(types, {}));
  target->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  target->setAttr("hector.entry", builder.getUnitAttr());
  for (auto [index, attr] : llvm::enumerate(attrs))
    target.setArgAttr(index, "hector.arg", attr);
  Block *entry = target.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  // Bind the hgraph arguments to their buffers.
  graphArgs.assign(entry->args_begin(), entry->args_begin() + NumGraphArrays);
  values.edgeNorm = graph(EdgeNorm);
  unsigned next = NumGraphArrays;
  for (BlockArgument arg : source.getArguments()) {
    if (isa<hg::GraphType>(arg.getType()))
      continue;
    Value memref = entry->getArgument(next++);
    if (isa<hg::WeightType>(arg.getType()))
      values.weights[arg] = memref;
    else if (cast<hg::FeatureType>(arg.getType()).isEdgeWise())
      values.edges[arg] = {memref, AccessScheme::Edge};
    else
      values.nodes[arg] = memref;
  }
  // Results are written straight into the caller's buffers when the value is
  // produced by an op that writes memory; others are stored at the return.
  auto ret = cast<hg::ReturnOp>(source.getBody().front().getTerminator());
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    Value output = entry->getArgument(next++);
    Operation *def = value.getDefiningOp();
    bool writesMemory =
        def && isa<hg::TypedLinearOp, hg::AggregateOp, hg::ConcatOp>(def) &&
        !isCompact(def) && !outputs.count(value);
    if (writesMemory)
      outputs[value] = output;
  }
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

Value FunctionLowering::allocate(Value hgraphValue, bool compactRows) {
  auto type = cast<hg::FeatureType>(hgraphValue.getType());
  Value rows = !type.isEdgeWise() ? size(NodeType)
               : compactRows      ? size(CompactSrc)
                                  : size(EdgeSrc);
  Value memref = memref::AllocOp::create(
      builder, loc, cast<MemRefType>(memrefFor(type)), ValueRange{rows});
  temporaries.push_back(memref);
  return memref;
}

Value FunctionLowering::destinationFor(Value hgraphValue, bool compactRows) {
  if (Value output = outputs.lookup(hgraphValue))
    return output;
  return allocate(hgraphValue, compactRows);
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
  buffer = allocate(value);
  if (failed(store(value, buffer, /*edgeDomain=*/false)))
    return failure();
  values.nodes[value] = buffer;
  return success();
}

/// The stored rows of an edge-wise value, storing it first when needed.
LogicalResult FunctionLowering::edgeLeaf(Value value, Leaf &leaf) {
  if (auto it = values.edges.find(value);
      it != values.edges.end() && (it->second.scheme == AccessScheme::Edge ||
                                   it->second.scheme == AccessScheme::Compact)) {
    leaf = it->second;
    return success();
  }
  Value buffer = allocate(value);
  if (failed(store(value, buffer, /*edgeDomain=*/true)))
    return failure();
  leaf = {buffer, AccessScheme::Edge};
  values.edges[value] = leaf;
  return success();
}

//===----------------------------------------------------------------------===//
// Traversals
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::traverse(bool edgeDomain,
                                         ArrayRef<Value> roots,
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
  SmallVector<Value> adjacency;
  if (edgeDomain)
    adjacency = {graph(EdgeSrc), graph(EdgeDst), graph(EdgeTypeArray)};
  auto traversal = ht::TraversalOp::create(
      builder, loc, adjacency,
      needsCompactMap ? graph(CompactMap) : Value(),
      needsNodeTypes ? graph(NodeType) : Value(), inputs, outs,
      edgeDomain ? ht::Domain::Edges : ht::Domain::Nodes,
      edgeDomain ? ht::Adjacency::COO : ht::Adjacency::None,
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
      SmallVector<Value, 2> indices{evaluator.row(leaf)};
      if (cast<MemRefType>(sink.memref.getType()).getRank() == 2) {
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
  scf::ForOp::create(
      builder, loc, zero, numHeads, one, ValueRange{},
      [&](OpBuilder &b, Location, Value head, ValueRange) {
        evaluator.startHead();
        if (headWidth == 1) {
          write(b, compute(b, evaluator, head, zero), head, zero);
        } else {
          for (Value root : roots)
            evaluator.hoistPerHead(b, root, head);
          Value width = arith::ConstantIndexOp::create(b, loc, headWidth);
          scf::ForOp::create(
              b, loc, zero, width, one, ValueRange{},
              [&](OpBuilder &inner, Location, Value feature, ValueRange) {
                write(inner, compute(inner, evaluator, head, feature), head,
                      feature);
                scf::YieldOp::create(inner, loc);
              });
        }
        scf::YieldOp::create(b, loc);
      });
  ht::YieldOp::create(builder, loc);
  return success();
}

/// Stores the row expression `value` into `destination`, one row per node or
/// edge.
LogicalResult FunctionLowering::store(Value value, Value destination,
                                      bool edgeDomain) {
  auto type = cast<hg::FeatureType>(value.getType());
  Sink sink{destination, edgeDomain ? AccessScheme::Edge : AccessScheme::Node,
            SinkKind::Store};
  return traverse(edgeDomain, {value}, {}, {sink}, type.getHeads(),
                  type.getHeadWidth(),
                  [&](OpBuilder &b, RowEvaluator &eval, Value head,
                      Value feature) {
                    return eval.emit(b, value, head, feature);
                  });
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

//===----------------------------------------------------------------------===//
// GEMM-producing ops
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::lowerTypedLinear(hg::TypedLinearOp op) {
  auto weightType = cast<hg::WeightType>(op.getWeight().getType());
  Value weight = values.weights.lookup(op.getWeight());
  bool typedByEdge = weightType.getIndex() == hg::WeightIndex::EdgeType;
  bool typedByNode = weightType.getIndex() == hg::WeightIndex::NodeType;
  Value result = op.getResult();
  hg::Endpoint from = op.getFrom();

  // Node rows, possibly read at an edge endpoint afterwards.
  auto nodeGemm = [&](Value input, Value out) -> LogicalResult {
    Value x;
    if (failed(nodeBuffer(input, x)))
      return failure();
    if (typedByNode)
      ht::GemmOp::create(builder, loc, x, weight, out, graph(NtypePerm),
                         Value(), graph(NtypePerm), graph(NtypeOffsets),
                         Value());
    else
      ht::GemmOp::create(builder, loc, x, weight, out, Value(), Value(),
                         Value(), Value(), Value());
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
  if (from != hg::Endpoint::Edge && !typedByEdge) {
    Value perNode = memref::AllocOp::create(
        builder, loc,
        MemRefType::get({ShapedType::kDynamic, weightType.getOutputWidth()},
                        weightType.getElementType()),
        ValueRange{size(NodeType)});
    temporaries.push_back(perNode);
    if (failed(nodeGemm(op.getInput(), perNode)))
      return failure();
    values.edges[result] = {perNode, from == hg::Endpoint::Src
                                         ? AccessScheme::Src
                                         : AccessScheme::Dst};
    if (Value output = outputs.lookup(result))
      return store(result, output, /*edgeDomain=*/true);
    return success();
  }

  bool compact = isCompact(op);
  Value lhs, lhsRows, segments;
  if (from == hg::Endpoint::Edge) {
    Leaf input;
    if (failed(edgeLeaf(op.getInput(), input)))
      return failure();
    lhs = input.memref;
    compact = input.scheme == AccessScheme::Compact;
    segments = compact ? graph(CompactOffsets) : graph(EtypeOffsets);
  } else {
    if (failed(nodeBuffer(op.getInput(), lhs)))
      return failure();
    lhsRows = compact                        ? graph(CompactSrc)
              : from == hg::Endpoint::Src ? graph(EdgeSrc)
                                          : graph(EdgeDst);
    segments = compact ? graph(CompactOffsets) : graph(EtypeOffsets);
  }
  Value out = destinationFor(result, compact);
  ht::GemmOp::create(builder, loc, lhs, weight, out, lhsRows, Value(), Value(),
                     typedByEdge ? segments : Value(), Value());
  values.edges[result] = {out, compact ? AccessScheme::Compact
                                       : AccessScheme::Edge};
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions over incoming edges
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::lowerAggregate(hg::AggregateOp op) {
  Value input = op.getInput();
  auto type = cast<hg::FeatureType>(input.getType());
  Value out = destinationFor(op.getResult());
  bool isMax = op.getKind() == hg::Reduction::Max;
  fill(out, isMax ? -std::numeric_limits<double>::infinity() : 0.0);
  Sink sink{out, AccessScheme::Dst, isMax ? SinkKind::Max : SinkKind::Add};
  if (failed(traverse(/*edgeDomain=*/true, {input}, {}, {sink},
                      type.getHeads(), type.getHeadWidth(),
                      [&](OpBuilder &b, RowEvaluator &eval, Value head,
                          Value feature) {
                        return eval.emit(b, input, head, feature);
                      })))
    return failure();

  auto outType = cast<MemRefType>(out.getType());
  Type element = outType.getElementType();
  Sink update{out, AccessScheme::Node, SinkKind::Store};
  if (op.getKind() == hg::Reduction::Mean) {
    // Divide by the in-degree, read from the CSR row pointers.
    Leaf rowPtr{graph(CsrRowPtr), AccessScheme::Whole};
    Leaf self{out, AccessScheme::Node};
    if (failed(traverse(
            /*edgeDomain=*/false, {}, {rowPtr, self}, {update}, 1,
            outType.getDimSize(1),
            [&](OpBuilder &b, RowEvaluator &eval, Value, Value feature) {
              Value node = eval.row(1);
              Value next = arith::AddIOp::create(
                  b, loc, node, arith::ConstantIndexOp::create(b, loc, 1));
              Value begin = memref::LoadOp::create(b, loc, graph(CsrRowPtr),
                                                   ValueRange{node});
              Value end = memref::LoadOp::create(b, loc, graph(CsrRowPtr),
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

LogicalResult FunctionLowering::lowerEdgeSoftmax(hg::EdgeSoftmaxOp op) {
  Value input = op.getInput();
  auto type = cast<hg::FeatureType>(input.getType());
  int64_t heads = type.getHeads(), headWidth = type.getHeadWidth();
  auto nodeType = MemRefType::get({ShapedType::kDynamic, type.getWidth()},
                                  type.getElementType());
  Value score = allocate(input);
  auto allocNode = [&] {
    Value memref = memref::AllocOp::create(builder, loc, nodeType,
                                           ValueRange{size(NodeType)});
    temporaries.push_back(memref);
    return memref;
  };
  Value max = allocNode(), sum = allocNode();
  fill(max, -std::numeric_limits<double>::infinity());
  fill(sum, 0.0);
  // Pass 1: store the scores and reduce their per-destination maximum.
  if (failed(traverse(/*edgeDomain=*/true, {input}, {},
                      {{score, AccessScheme::Edge, SinkKind::Store},
                       {max, AccessScheme::Dst, SinkKind::Max}},
                      heads, headWidth,
                      [&](OpBuilder &b, RowEvaluator &eval, Value head,
                          Value feature) {
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
  // The normalised value is evaluated by its consumers.
  values.softmaxes[op.getResult()] = {score, max, sum};
  if (Value output = outputs.lookup(op.getResult()))
    return store(op.getResult(), output, /*edgeDomain=*/true);
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
    if (failed(traverse(edgeDomain, {input}, {}, {sink}, inType.getHeads(),
                        inType.getHeadWidth(),
                        [&](OpBuilder &b, RowEvaluator &eval, Value head,
                            Value feature) {
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
  unsigned firstOutput = entry.getNumArguments() - op.getNumOperands();
  for (auto [index, value] : llvm::enumerate(op.getOperands())) {
    Value output = entry.getArgument(firstOutput + index);
    if (outputs.lookup(value) == output)
      continue; // already written in place
    auto type = dyn_cast<hg::FeatureType>(value.getType());
    if (!type)
      return op.emitError("hgraph-to-htmpl: returning weights is not "
                          "supported");
    if (failed(store(value, output, type.isEdgeWise())))
      return failure();
  }
  for (Value memref : temporaries)
    memref::DeallocOp::create(builder, loc, memref);
  func::ReturnOp::create(builder, loc);
  return success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult FunctionLowering::lower(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](hg::TypedLinearOp typed) { return lowerTypedLinear(typed); })
      .Case([&](hg::AggregateOp aggregate) { return lowerAggregate(aggregate); })
      .Case([&](hg::EdgeSoftmaxOp softmax) { return lowerEdgeSoftmax(softmax); })
      .Case([&](hg::ConcatOp concat) { return lowerConcat(concat); })
      .Case([&](hg::ReturnOp ret) { return lowerReturn(ret); })
      .Case([&](hg::WeightProductOp product) {
        return product.emitError("hgraph-to-htmpl: weight products are not "
                                 "lowered yet");
      })
      // Row-wise ops are evaluated inside their consumers' traversals.
      .Default([](Operation *) { return success(); });
}

LogicalResult FunctionLowering::run() {
  createEntryPoint();
  for (Operation &op : source.getBody().front())
    if (failed(lower(&op)))
      return failure();

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
  void runOnOperation() override {
    SmallVector<hg::FuncOp> functions(getOperation().getOps<hg::FuncOp>());
    for (hg::FuncOp function : functions)
      if (failed(FunctionLowering(function).run()))
        return signalPassFailure();
  }
};

} // namespace
