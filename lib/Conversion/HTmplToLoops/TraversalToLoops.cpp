//===- TraversalToLoops.cpp - htmpl.traversal to parallel loops -*- C++ -*-===//
//
// - edges coo(src, dst, etype): one iteration per edge e in [0, size(src)).
// - edges pairs(src, dst, etype, pair_eid): one iteration per slot k in
//   [0, size(src)), whose edge is e = pair_eid[k]; then as coo.
// - edges csr(row_ptr, src, eid, etype): one iteration per destination node
//   t in [0, size(row_ptr) - 1), with an scf.for over its CSR slots
//   row_ptr[t] .. row_ptr[t+1]-1; the current edge id is eid[slot].
// - nodes: one iteration per node n in [0, N), N = size(node_types) when the
//   traversal has node_types, else dim 0 of its first `node` operand (a node
//   traversal with neither is rejected).
// The iterations form two nested scf.parallel loops, groups of
// `launch_bounds` lanes (GPU blocks of threads), guarded at the end.
//
// Each iteration resolves the row of every used operand from its access
// scheme, then the body is moved into the loop with its block arguments
// replaced by those rows. htmpl.accumulate becomes memref.atomic_rmw, except
// in CSR order where the destination row is the loop's own node: then no
// other iteration touches that row and a plain load-combine-store suffices.
//
//===----------------------------------------------------------------------===//

#include "LoopLowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <array>

using namespace mlir;
using namespace hector;
using namespace hector::htmpl;
using hector::loops::constIndex;
using hector::loops::dimOf;
using hector::loops::bodyArguments;
using hector::loops::inlineBody;
using hector::loops::loadIndex;
using hector::loops::openParallel;

namespace {
/// The operand that gives a node traversal its node count, or null.
Value nodeCountSource(TraversalOp op) {
  if (Value types = op.getNodeTypes())
    return types;
  unsigned index = 0;
  for (Value operand : llvm::concat<Value>(op.getInputs(), op.getOutputs())) {
    if (op.getScheme(index++) == AccessScheme::Node)
      return operand;
  }
  return {};
}

bool isAccumulableType(Type type) { return isa<IntegerType, FloatType>(type); }

arith::AtomicRMWKind atomicKind(AccumulateOp acc) {
  bool isFloat = isa<FloatType>(acc.getValue().getType());
  if (acc.getKind() == Reduction::Add)
    return isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
  return isFloat ? arith::AtomicRMWKind::maximumf : arith::AtomicRMWKind::maxs;
}

/// The memref a view is taken of, through any chain of view-like ops.
Value rootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// The memref an op in a traversal body writes, or null when it writes none.
/// Sets `unknown` when the op may write memory in a way not modelled here.
Value writtenBuffer(Operation *op, bool &unknown) {
  if (auto acc = dyn_cast<AccumulateOp>(op))
    return acc.getDest();
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return store.getMemRef();
  if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op))
    return rmw.getMemref();
  if (isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::YieldOp, scf::ConditionOp,
          YieldOp>(op))
    return {}; // control flow: its nested ops are visited on their own
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects) {
    unknown = true;
    return {};
  }
  if (effects.hasEffect<MemoryEffects::Write>() ||
      effects.hasEffect<MemoryEffects::Free>())
    unknown = true;
  return {};
}

/// True when an accumulate of a CSR traversal only ever touches the row of
/// the loop's destination node, so that a plain read-modify-write is safe:
/// its first index is a `dst` row, every write to its buffer in the body is at
/// a `dst` row, no other buffer written in the body is a view of the same
/// buffer, and no parallel construct inside the body encloses it.
bool canAccumulateLocally(TraversalOp op, AccumulateOp acc) {
  if (op.getAdjacencyFormat() != Adjacency::CSR)
    return false;
  unsigned numOperands = op.getInputs().size() + op.getOutputs().size();
  auto isDstRow = [&](Value value) {
    for (unsigned i = 0; i < numOperands; ++i)
      if (op.getScheme(i) == AccessScheme::Dst && value == op.getRowArgument(i))
        return true;
    return false;
  };
  auto firstIndexIsDstRow = [&](OperandRange indices) {
    return !indices.empty() && isDstRow(indices.front());
  };
  if (!firstIndexIsDstRow(acc.getIndices()))
    return false;
  for (Operation *parent = acc->getParentOp(); parent != op.getOperation();
       parent = parent->getParentOp())
    if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp>(parent))
      return false;

  Value dest = acc.getDest();
  Value root = rootBuffer(dest);
  bool safe = true;
  op.getBody().walk([&](Operation *inner) {
    bool unknown = false;
    Value written = writtenBuffer(inner, unknown);
    if (unknown) {
      safe = false;
      return;
    }
    if (!written)
      return;
    if (written != dest) {
      if (rootBuffer(written) == root)
        safe = false;
      return;
    }
    if (auto other = dyn_cast<AccumulateOp>(inner))
      safe &= firstIndexIsDstRow(other.getIndices());
    else if (auto store = dyn_cast<memref::StoreOp>(inner))
      safe &= firstIndexIsDstRow(store.getIndices());
    else
      safe = false;
  });
  return safe;
}

/// `dest[indices] = combine(dest[indices], value)` without atomics.
void emitLocalAccumulate(OpBuilder &b, AccumulateOp acc) {
  Location loc = acc.getLoc();
  Value old = memref::LoadOp::create(b, loc, acc.getDest(), acc.getIndices());
  Value value = acc.getValue(), combined;
  bool isFloat = isa<FloatType>(value.getType());
  if (acc.getKind() == Reduction::Add)
    combined = isFloat ? Value(arith::AddFOp::create(b, loc, old, value))
                       : Value(arith::AddIOp::create(b, loc, old, value));
  else
    combined = isFloat ? Value(arith::MaximumFOp::create(b, loc, old, value))
                       : Value(arith::MaxSIOp::create(b, loc, old, value));
  memref::StoreOp::create(b, loc, combined, acc.getDest(), acc.getIndices());
}

/// COO (one parallel iteration per edge) and pair order (one per slot,
/// whose edge is pair_eid[slot]).
void lowerEdgeList(RewriterBase &rewriter, TraversalOp op) {
  Location loc = op.getLoc();
  OperandRange adjacency = op.getAdjacency();
  Value src = adjacency[0], dst = adjacency[1], etype = adjacency[2];
  Value e = openParallel(rewriter, loc, dimOf(rewriter, loc, src, 0),
                         op.getLaunchBounds());
  if (op.getAdjacencyFormat() == Adjacency::Pairs)
    e = loadIndex(rewriter, loc, adjacency[3], e);
  SmallVector<Value> args =
      bodyArguments(rewriter, loc, op, [&](AccessScheme scheme) -> Value {
        switch (scheme) {
        case AccessScheme::Edge:
          return e;
        case AccessScheme::Compact:
          return loadIndex(rewriter, loc, op.getCompactMap(), e);
        case AccessScheme::Src:
          return loadIndex(rewriter, loc, src, e);
        case AccessScheme::Dst:
          return loadIndex(rewriter, loc, dst, e);
        case AccessScheme::EdgeType:
          return loadIndex(rewriter, loc, etype, e);
        default:
          llvm_unreachable("scheme not valid on edges (verified)");
        }
      });
  inlineBody(rewriter, op, args);
}

void lowerCsr(RewriterBase &rewriter, TraversalOp op) {
  Location loc = op.getLoc();
  OperandRange adjacency = op.getAdjacency();
  Value rowPtr = adjacency[0], src = adjacency[1], eid = adjacency[2],
        etype = adjacency[3];
  Value c0 = constIndex(rewriter, loc, 0), c1 = constIndex(rewriter, loc, 1);
  // [N+1] offsets; max with 0 keeps an empty row_ptr from giving N = -1.
  Value numNodes = rewriter.createOrFold<arith::MaxSIOp>(
      loc,
      rewriter.createOrFold<arith::SubIOp>(loc, dimOf(rewriter, loc, rowPtr, 0),
                                           c1),
      c0);
  Value t = openParallel(rewriter, loc, numNodes, op.getLaunchBounds());
  Value begin = loadIndex(rewriter, loc, rowPtr, t);
  Value end = loadIndex(rewriter, loc, rowPtr,
                        arith::AddIOp::create(rewriter, loc, t, c1));
  auto slots = scf::ForOp::create(rewriter, loc, begin, end, c1);
  rewriter.setInsertionPointToStart(slots.getBody());
  Value slot = slots.getInductionVar();
  Value edgeId;
  auto edge = [&]() {
    if (!edgeId)
      edgeId = loadIndex(rewriter, loc, eid, slot);
    return edgeId;
  };
  SmallVector<Value> args =
      bodyArguments(rewriter, loc, op, [&](AccessScheme scheme) -> Value {
        switch (scheme) {
        case AccessScheme::Edge:
          return edge();
        case AccessScheme::Compact:
          return loadIndex(rewriter, loc, op.getCompactMap(), edge());
        case AccessScheme::Src:
          return loadIndex(rewriter, loc, src, slot);
        case AccessScheme::Dst:
          return t;
        case AccessScheme::EdgeType:
          return loadIndex(rewriter, loc, etype, slot);
        default:
          llvm_unreachable("scheme not valid on edges (verified)");
        }
      });
  inlineBody(rewriter, op, args);
}

void lowerNodes(RewriterBase &rewriter, TraversalOp op) {
  Location loc = op.getLoc();
  Value n =
      openParallel(rewriter, loc, dimOf(rewriter, loc, nodeCountSource(op), 0),
                   op.getLaunchBounds());
  SmallVector<Value> args =
      bodyArguments(rewriter, loc, op, [&](AccessScheme scheme) -> Value {
        switch (scheme) {
        case AccessScheme::Node:
          return n;
        case AccessScheme::NodeType:
          return loadIndex(rewriter, loc, op.getNodeTypes(), n);
        default:
          llvm_unreachable("scheme not valid on nodes (verified)");
        }
      });
  inlineBody(rewriter, op, args);
}
} // namespace

LogicalResult hector::loops::checkTraversal(TraversalOp op) {
  if (op.getDomain() == Domain::Nodes && !nodeCountSource(op))
    return op.emitOpError(
        "cannot tell the node count: a node traversal needs node_types or an "
        "operand accessed 'as node'");
  WalkResult result = op.getBody().walk([&](AccumulateOp acc) {
    Type type = acc.getValue().getType();
    if (isAccumulableType(type))
      return WalkResult::advance();
    acc.emitOpError("cannot be lowered to an atomic update: element type ")
        << type << " is neither an integer nor a float";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

void hector::loops::lowerTraversal(RewriterBase &rewriter, TraversalOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  // Decide every accumulate before rewriting any: the safety check of local
  // accumulation inspects the other accumulates of the body.
  SmallVector<std::pair<AccumulateOp, bool>> accumulates;
  op.getBody().walk([&](AccumulateOp acc) {
    accumulates.push_back({acc, canAccumulateLocally(op, acc)});
  });
  for (auto [acc, local] : accumulates) {
    rewriter.setInsertionPoint(acc);
    if (local)
      emitLocalAccumulate(rewriter, acc);
    else
      memref::AtomicRMWOp::create(rewriter, acc.getLoc(), atomicKind(acc),
                                  acc.getValue(), acc.getDest(),
                                  acc.getIndices());
    rewriter.eraseOp(acc);
  }

  rewriter.setInsertionPoint(op);
  if (op.getDomain() == Domain::Nodes)
    lowerNodes(rewriter, op);
  else if (op.getAdjacencyFormat() == Adjacency::CSR)
    lowerCsr(rewriter, op);
  else
    lowerEdgeList(rewriter, op);
  rewriter.eraseOp(op);
}

Value hector::loops::openParallel(OpBuilder &b, Location loc, Value upper,
                                  int64_t lanes) {
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1),
        width = constIndex(b, loc, lanes);
  Value groups = b.createOrFold<arith::CeilDivUIOp>(loc, upper, width);
  auto outer = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                       ValueRange{groups}, ValueRange{c1});
  b.setInsertionPointToStart(outer.getBody());
  auto inner = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                       ValueRange{width}, ValueRange{c1});
  b.setInsertionPointToStart(inner.getBody());
  Value base =
      arith::MulIOp::create(b, loc, outer.getInductionVars()[0], width);
  Value index =
      arith::AddIOp::create(b, loc, base, inner.getInductionVars()[0]);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index, upper);
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  return index;
}
