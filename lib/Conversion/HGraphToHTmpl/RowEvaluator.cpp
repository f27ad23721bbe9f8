//===- RowEvaluator.cpp - scalar code for hgraph row expressions -*- C++ -*-===//

#include "RowEvaluator.h"

#include "hector/Dialect/HGraph/IR/LoweringStorage.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace hector;
using namespace hector::lowering;
namespace hg = hector::hgraph;
using htmpl::AccessScheme;

namespace {
Value constantFloat(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}
} // namespace

std::optional<Leaf> RowEvaluator::leafOf(Value value) const {
  if (Value seed = store.seeds.lookup(value))
    return Leaf{seed, AccessScheme::Whole};
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

Value RowEvaluator::collect(Value root) {
  // Depth-first, iteratively: (value, index of its next operand). A value
  // is marked collected once all of its leaves are recorded, so that a
  // shared operand is walked once (and once more after a missing value was
  // stored and the caller asks again).
  SmallVector<std::pair<Value, unsigned>> stack;
  if (!collected.contains(root))
    stack.push_back({root, 0});
  while (!stack.empty()) {
    auto &[value, next] = stack.back();
    Operation *op = value.getDefiningOp();
    if (next == 0) {
      bool done = true;
      if (std::optional<Leaf> leaf = leafOf(value)) {
        addLeaf(*leaf);
      } else if (auto it = store.softmaxes.find(value);
                 it != store.softmaxes.end()) {
        addLeaf({it->second.score, AccessScheme::Edge});
        addLeaf({it->second.max, AccessScheme::Dst});
        addLeaf({it->second.sum, AccessScheme::Dst});
      } else if (auto gather = dyn_cast_or_null<hg::GatherOp>(op)) {
        return gather.getInput(); // read on edges but not in memory
      } else if (isa_and_nonnull<hg::DegreeNormOp>(op)) {
        // The destination's CSR row bounds give its in-degree.
        addLeaf({store.csrRowPtr, AccessScheme::Dst});
      } else if (!op || !hg::isRowWise(op)) {
        return value;
      } else {
        // Dropout hashes the caller's index of the edge.
        if (isa<hg::DropoutOp>(op))
          addLeaf({store.edgePerm, AccessScheme::Edge});
        done = false;
      }
      if (done) {
        collected.insert(value);
        stack.pop_back();
        continue;
      }
    }
    if (next < op->getNumOperands()) {
      Value operand = op->getOperand(next++);
      if (!collected.contains(operand))
        stack.push_back({operand, 0}); // may invalidate `value`, `next`
      continue;
    }
    collected.insert(value);
    stack.pop_back();
  }
  return {};
}

Value RowEvaluator::column(OpBuilder &b, hg::FeatureType type, Value head,
                           Value feature) {
  Location loc = head      ? head.getLoc()
                 : feature ? feature.getLoc()
                           : b.getUnknownLoc();
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

RowEvaluator::Request RowEvaluator::normalize(Value value, Value head,
                                              Value feature) {
  auto type = cast<hg::FeatureType>(value.getType());
  if (isPerHead(type))
    feature = Value();
  if (type.getHeads() == 1)
    head = Value(); // a single head block serves every head
  return {value, head, feature};
}

SmallVector<Value> RowEvaluator::perHeadInputs(Value root) const {
  SmallVector<Value> found, stack{root};
  DenseSet<Value> seen{root};
  while (!stack.empty()) {
    Value value = stack.pop_back_val();
    if (isPerHead(cast<hg::FeatureType>(value.getType()))) {
      found.push_back(value);
      continue;
    }
    if (leafOf(value) || store.softmaxes.count(value))
      continue;
    if (Operation *op = value.getDefiningOp())
      for (Value operand : op->getOperands())
        if (isa<hg::FeatureType>(operand.getType()) &&
            seen.insert(operand).second)
          stack.push_back(operand);
  }
  // Found in depth-first order from the root: emit the deepest first (each
  // emit evaluates what it reads anyway; the order only keeps the code in
  // program order).
  std::reverse(found.begin(), found.end());
  return found;
}

void RowEvaluator::hoistPerHead(OpBuilder &b, Value value, Value head) {
  for (Value input : perHeadInputs(value))
    emit(b, input, head, Value());
}

Value RowEvaluator::lookup(const Request &request, Block *block) const {
  for (; block; block = block->getParentOp() ? block->getParentOp()->getBlock()
                                             : nullptr)
    if (Value known = emitted.lookup(
            {request.value, request.head, request.feature, block}))
      return known;
  return {};
}

Value RowEvaluator::offsetColumn(OpBuilder &b, Location loc, int64_t offset,
                                 Value feature) {
  if (feature && offset == 0)
    return feature;
  for (Block *block = b.getInsertionBlock(); block;
       block = block->getParentOp() ? block->getParentOp()->getBlock()
                                    : nullptr)
    if (Value known = columns.lookup({feature, offset, block}))
      return known;
  Value column = arith::ConstantIndexOp::create(b, loc, offset);
  if (feature)
    column = arith::AddIOp::create(b, loc, column, feature);
  columns[{feature, offset, b.getInsertionBlock()}] = column;
  return column;
}

Value RowEvaluator::emitMemory(OpBuilder &b, const Request &request) {
  Value value = request.value;
  auto type = cast<hg::FeatureType>(value.getType());
  if (std::optional<Leaf> leaf = leafOf(value))
    return load(b, leafIndex(*leaf),
                column(b, type, request.head, request.feature));
  auto it = store.softmaxes.find(value);
  if (it == store.softmaxes.end())
    return {};
  Value col = column(b, type, request.head, request.feature);
  Location loc = value.getLoc();
  Value score = load(b, leafIndex({it->second.score, AccessScheme::Edge}), col);
  Value max = load(b, leafIndex({it->second.max, AccessScheme::Dst}), col);
  Value sum = load(b, leafIndex({it->second.sum, AccessScheme::Dst}), col);
  Value shifted = arith::SubFOp::create(b, loc, score, max);
  Value exp = math::ExpOp::create(b, loc, shifted);
  return arith::DivFOp::create(b, loc, exp, sum);
}

/// One pending evaluation of `emit`'s explicit stack: where it is emitted,
/// how far it got, and the evaluations of the operands it needs.
struct RowEvaluator::Frame {
  Frame(Request request, Block *block, Block::iterator point)
      : request(request), block(block), point(point) {}
  Request request;
  Block *block;
  Block::iterator point;
  /// 0: new; 1: operands requested; 2: a dot's loop built, its body's
  /// operands requested.
  unsigned stage = 0;
  SmallVector<Request, 2> operands;
  scf::ForOp loop;
};

Value RowEvaluator::emit(OpBuilder &b, Value value, Value head,
                         Value feature) {
  OpBuilder::InsertionGuard guard(b);
  Block *rootBlock = b.getInsertionBlock();
  Request root = normalize(value, head, feature);
  SmallVector<Frame> stack;
  stack.emplace_back(root, b.getInsertionBlock(), b.getInsertionPoint());
  // Asks for the evaluations in `requests` not yet visible at `block`, to
  // be emitted at `point` (in order: the first is emitted first).
  auto push = [&](ArrayRef<Request> requests, Block *block,
                  Block::iterator point) {
    for (const Request &request : llvm::reverse(requests))
      if (!lookup(request, block))
        stack.emplace_back(request, block, point);
  };
  while (!stack.empty()) {
    Frame &frame = stack.back();
    b.setInsertionPoint(frame.block, frame.point);
    Request request = frame.request;
    Operation *op = request.value.getDefiningOp();
    if (frame.stage == 0) {
      if (lookup(request, frame.block)) {
        stack.pop_back();
        continue;
      }
      if (Value memory = emitMemory(b, request)) {
        emitted[{request.value, request.head, request.feature,
                 frame.block}] = memory;
        stack.pop_back();
        continue;
      }
      frame.stage = 1;
      Block *block = frame.block;
      Block::iterator point = frame.point;
      if (auto dot = dyn_cast<hg::DotOp>(op)) {
        // The per-head inputs of both operands, outside the dot's loop.
        SmallVector<Request> hoisted;
        for (Value operand : {dot.getLhs(), dot.getRhs()})
          for (Value input : perHeadInputs(operand))
            hoisted.push_back(normalize(input, request.head, Value()));
        push(hoisted, block, point);
        continue;
      }
      SmallVector<Request, 2> operands;
      if (auto slice = dyn_cast<hg::SliceOp>(op)) {
        // Column `offset + feature` of the input's head block.
        Value input = slice.getInput();
        Value column =
            isPerHead(cast<hg::FeatureType>(input.getType()))
                ? Value()
                : offsetColumn(b, op->getLoc(), slice.getOffset(),
                               request.feature);
        operands.push_back(normalize(input, request.head, column));
      } else {
        for (Value operand : op->getOperands())
          if (isa<hg::FeatureType>(operand.getType())) // not degree_norm's graph
            operands.push_back(
                normalize(operand, request.head, request.feature));
      }
      frame.operands = operands;
      push(operands, block, point);
      continue;
    }
    if (auto dot = dyn_cast<hg::DotOp>(op); dot && frame.stage == 1) {
      // Per-head inner product: a reduction loop over the head's features,
      // whose body evaluates both operands at feature j.
      Location loc = op->getLoc();
      Type element = cast<hg::FeatureType>(dot.getType()).getElementType();
      auto inType = cast<hg::FeatureType>(dot.getLhs().getType());
      Value zero = constantFloat(b, loc, element, 0.0);
      Value lower = arith::ConstantIndexOp::create(b, loc, 0);
      Value upper =
          arith::ConstantIndexOp::create(b, loc, inType.getHeadWidth());
      Value step = arith::ConstantIndexOp::create(b, loc, 1);
      frame.loop =
          scf::ForOp::create(b, loc, lower, upper, step, ValueRange{zero});
      Block *body = frame.loop.getBody();
      Value j = frame.loop.getInductionVar();
      frame.operands = {normalize(dot.getLhs(), request.head, j),
                        normalize(dot.getRhs(), request.head, j)};
      frame.stage = 2;
      SmallVector<Request, 2> operands = frame.operands;
      push(operands, body, body->end());
      continue;
    }
    // Every operand is evaluated: emit the op itself.
    Value result;
    if (auto dot = dyn_cast<hg::DotOp>(op)) {
      Block *body = frame.loop.getBody();
      Location loc = op->getLoc();
      OpBuilder nested = OpBuilder::atBlockEnd(body);
      Value lhs = lookup(frame.operands[0], body);
      Value rhs = lookup(frame.operands[1], body);
      Value product = arith::MulFOp::create(nested, loc, lhs, rhs);
      Value sum = arith::AddFOp::create(nested, loc,
                                        frame.loop.getRegionIterArg(0), product);
      scf::YieldOp::create(nested, loc, sum);
      result = frame.loop.getResult(0);
    } else {
      SmallVector<Value, 2> operands;
      for (const Request &operand : frame.operands)
        operands.push_back(lookup(operand, frame.block));
      if (auto dropout = dyn_cast<hg::DropoutOp>(op))
        result = emitDropout(b, dropout, request, operands[0]);
      else
        result = emitOp(b, op, operands);
    }
    emitted[{request.value, request.head, request.feature, frame.block}] =
        result;
    stack.pop_back();
  }
  return lookup(root, rootBlock);
}

namespace {
/// MurmurHash3's 32-bit finalizer (the mask of hgraph.dropout).
Value fmix32(OpBuilder &b, Location loc, Value x) {
  auto constant = [&](uint32_t value) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        static_cast<int32_t>(value));
  };
  auto xorShift = [&](Value v, unsigned shift) {
    return arith::XOrIOp::create(
        b, loc, v, arith::ShRUIOp::create(b, loc, v, constant(shift)));
  };
  x = xorShift(x, 16);
  x = arith::MulIOp::create(b, loc, x, constant(0x85EBCA6Bu));
  x = xorShift(x, 13);
  x = arith::MulIOp::create(b, loc, x, constant(0xC2B2AE35u));
  return xorShift(x, 16);
}
} // namespace

Value RowEvaluator::emitDropout(OpBuilder &b, hg::DropoutOp op,
                                const Request &request, Value input) {
  // The mask of the op's description: keep (seed, caller's edge index n,
  // column j) when fmix(fmix((n·W + j) ^ k1) + k2) >> 8 >= ceil(p·2^24).
  Location loc = op.getLoc();
  auto type = cast<hg::FeatureType>(op.getType());
  Type element = type.getElementType();
  double p = op.getP().convertToDouble();
  if (p >= 1.0)
    return constantFloat(b, loc, element, 0.0);
  if (p <= 0.0) // keeps everything, scaled by 1 (the op's folder, unless
    return input; // nothing canonicalized the function first)
  auto constant = [&](uint32_t value) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        static_cast<int32_t>(value));
  };
  Type i32 = b.getI32Type();
  // The seed's keys, once per traversal body (at its start, where every
  // head and feature loop sees them), not once per element.
  Value seedMemref = store.seeds.lookup(op.getSeed());
  Block *body = cast<BlockArgument>(rowArgs.front()).getOwner();
  auto [it, inserted] = seedKeys.try_emplace({seedMemref, body});
  if (inserted) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    Value seed =
        load(b, leafIndex({seedMemref, AccessScheme::Whole}),
             arith::ConstantIndexOp::create(b, loc, 0));
    Value lo = arith::TruncIOp::create(b, loc, i32, seed);
    Value hi = arith::TruncIOp::create(
        b, loc, i32,
        arith::ShRUIOp::create(
            b, loc, seed,
            arith::ConstantIntOp::create(b, loc, b.getI64Type(), 32)));
    Value k1 = fmix32(
        b, loc,
        arith::XOrIOp::create(b, loc, lo, arith::ConstantIntOp::create(
                                              b, loc, i32, 0x243F6A88)));
    Value k2 = fmix32(
        b, loc,
        arith::XOrIOp::create(
            b, loc, arith::XOrIOp::create(b, loc, hi, k1),
            arith::ConstantIntOp::create(
                b, loc, i32, static_cast<int32_t>(0x85A308D3u))));
    it->second = {k1, k2};
  }
  auto [k1, k2] = it->second;
  // n·W, once per edge too.
  auto [base, fresh] = edgeCounters.try_emplace({body, type.getWidth()});
  if (fresh) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(body, std::next(it->second.second.getDefiningOp()
                                            ->getIterator()));
    unsigned permLeaf = leafIndex({store.edgePerm, AccessScheme::Edge});
    Value edge = memref::LoadOp::create(b, loc, store.edgePerm,
                                        ValueRange{rowArgs[permLeaf]});
    base->second = arith::MulIOp::create(
        b, loc, edge, constant(static_cast<uint32_t>(type.getWidth())));
  }
  Value col = arith::IndexCastUIOp::create(
      b, loc, i32, column(b, type, request.head, request.feature));
  Value counter = arith::AddIOp::create(b, loc, base->second, col);
  Value hash = fmix32(
      b, loc,
      arith::AddIOp::create(
          b, loc, fmix32(b, loc, arith::XOrIOp::create(b, loc, counter, k1)),
          k2));
  Value bits = arith::ShRUIOp::create(b, loc, hash, constant(8));
  uint32_t threshold = static_cast<uint32_t>(std::ceil(std::ldexp(p, 24)));
  Value keep = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, bits,
                                     constant(threshold));
  Value scaled = arith::MulFOp::create(
      b, loc, input, constantFloat(b, loc, element, 1.0 / (1.0 - p)));
  return arith::SelectOp::create(b, loc, keep, scaled,
                                 constantFloat(b, loc, element, 0.0));
}

Value RowEvaluator::emitOp(OpBuilder &b, Operation *op,
                           ArrayRef<Value> operands) {
  Location loc = op->getLoc();
  Type element = cast<hg::FeatureType>(op->getResult(0).getType())
                     .getElementType();
  auto operand = [&](unsigned index) { return operands[index]; };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](hg::ScaleOp) -> Value {
        return arith::MulFOp::create(b, loc, operand(0), operand(1));
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
      .Case([&](hg::GeluOp) -> Value {
        // 0.5·x·(1 + erf(x/√2)); math.erf is erff on the CPU (libm) and
        // __nv_erff on the GPU (libdevice).
        Value x = operand(0);
        Value erf = math::ErfOp::create(
            b, loc,
            arith::MulFOp::create(b, loc, x,
                                  constantFloat(b, loc, element, llvm::numbers::inv_sqrt2)));
        Value onePlus = arith::AddFOp::create(
            b, loc, constantFloat(b, loc, element, 1.0), erf);
        Value half = arith::MulFOp::create(
            b, loc, constantFloat(b, loc, element, 0.5), x);
        return arith::MulFOp::create(b, loc, half, onePlus);
      })
      .Case([&](hg::GeluGradOp) -> Value {
        // grad·(Φ(x) + x·φ(x)), Φ(x) = 0.5·(1 + erf(x/√2)),
        // φ(x) = exp(−x²/2)/√(2π).
        Value grad = operand(0), x = operand(1);
        Value erf = math::ErfOp::create(
            b, loc,
            arith::MulFOp::create(b, loc, x,
                                  constantFloat(b, loc, element, llvm::numbers::inv_sqrt2)));
        Value cdf = arith::MulFOp::create(
            b, loc, constantFloat(b, loc, element, 0.5),
            arith::AddFOp::create(b, loc, constantFloat(b, loc, element, 1.0),
                                  erf));
        Value square = arith::MulFOp::create(b, loc, x, x);
        Value density = arith::MulFOp::create(
            b, loc,
            math::ExpOp::create(
                b, loc,
                arith::MulFOp::create(b, loc, square,
                                      constantFloat(b, loc, element, -0.5))),
            constantFloat(b, loc, element, llvm::numbers::inv_sqrtpi * llvm::numbers::inv_sqrt2));
        Value slope = arith::AddFOp::create(
            b, loc, cdf, arith::MulFOp::create(b, loc, x, density));
        return arith::MulFOp::create(b, loc, grad, slope);
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
      .Case([&](hg::SliceOp) -> Value {
        // The input, evaluated at the sliced column (emit's request).
        return operand(0);
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
        llvm_unreachable("collect() admits only row-wise ops; emit() builds "
                         "dots itself");
      });
}
