//===- CPUTraversal.cpp - COO traversals partitioned by destination -*- C++ -*-===//
//
// htmpl-to-loops runs a COO edge traversal as one parallel loop over the
// edges, so every htmpl.accumulate becomes an atomic read-modify-write. On a
// CPU a float atomic add is a locked compare-and-swap loop, tens of cycles
// even when nobody else touches the line, paid per feature of every edge.
//
// In the canonical edge order (docs/compilation.md) the edges of one type
// are sorted by destination. This pass gives each parallel iteration a
// block of destination nodes and, for every edge type, the contiguous run of
// that type's edges whose destination lies in the block (binary searches on
// (type, destination)). Each destination row then has one writer, so the
// accumulates into destination rows become plain read-modify-writes; the
// others stay atomic. A traversal without such accumulates but with
// accumulates into edge-type rows (per-type gradients) runs one iteration
// per edge type instead (its edges are one run), which makes those plain.
// Either way each row is summed in edge order, whatever the thread count.
//
// The order is checked at run time (one pass over the two arrays, shared by
// the traversals of a function that read the same arrays): when the arrays
// are not sorted by (type, destination), the traversal runs as before,
// through htmpl-to-loops, with atomics. So the result never depends on the
// order, only the speed does.
//
//   scf.if %sorted {
//     scf.parallel (%b) = (0) to (blocks) {    // nodes [b*S, min(b*S+S, N))
//       %e = 0
//       while %e < E:                          // one edge type per step
//         t = etype[e]
//         first = lower_bound((t, b*S)), end = lower_bound((t, b*S+S))
//         scf.for %edge = first to end { body }
//         %e = first edge of a later type
//     }
//   } else { the traversal, unchanged (htmpl-to-loops lowers it) }
//
// and, partitioned by edge type,
//
//     scf.parallel (%t) = (0) to (rows of the per-type buffer) {
//       scf.for %edge = lower_bound(t) to lower_bound(t + 1) { body } }
//
// A traversal in pair order (`pairs`, slots grouped by (source, edge type)
// pair through pair_eid) whose accumulates go into pair rows runs one
// iteration per block of pairs, over the slots whose pair lies in the block
// (binary searches on compact_map[pair_eid[k]]): each pair row then has one
// writer. Its order is checked the same way.
//
//===----------------------------------------------------------------------===//

#include "hector/Conversion/Passes.h"

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include <map>

namespace hector {
#define GEN_PASS_DEF_CPUTRAVERSAL
#include "hector/Conversion/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using hector::htmpl::AccessScheme;
using hector::htmpl::AccumulateOp;
using hector::htmpl::TraversalOp;
using hector::templates::constIndex;
using hector::templates::dimOf;
using hector::templates::loadIndex;
using hector::templates::lowerBound;

namespace {

/// Destination blocks per traversal (at most): enough for dynamic load
/// balance on many threads, few enough that the per-block binary searches
/// (3 per edge type) stay small next to the edges' work.
constexpr int64_t kMaxBlocks = 1024;
/// Nodes per destination block (at least).
constexpr int64_t kMinBlockNodes = 64;
/// Pairs per pair block (at least).
constexpr int64_t kMinBlockPairs = 64;

Value rootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// Is `value` the row of an operand accessed with `scheme`?
bool isRowOf(TraversalOp op, Value value, AccessScheme scheme) {
  unsigned count = op.getInputs().size() + op.getOutputs().size();
  for (unsigned i = 0; i < count; ++i)
    if (op.getScheme(i) == scheme && value == op.getRowArgument(i))
      return true;
  return false;
}

bool firstIndexIsRowOf(TraversalOp op, OperandRange indices,
                       AccessScheme scheme) {
  return !indices.empty() && isRowOf(op, indices.front(), scheme);
}

/// True when, with one writer per row of `scheme` (destination or edge
/// type), `acc` needs no atomic: it and every other write of the body to its
/// buffer are at such a row, no other written buffer is a view of the same
/// memory, and it is not inside a parallel construct of the body.
bool isLocal(TraversalOp op, AccumulateOp acc, AccessScheme scheme) {
  if (!firstIndexIsRowOf(op, acc.getIndices(), scheme))
    return false;
  for (Operation *parent = acc->getParentOp(); parent != op.getOperation();
       parent = parent->getParentOp())
    if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp>(parent))
      return false;
  Value dest = acc.getDest(), root = rootBuffer(dest);
  bool safe = true;
  op.getBody().walk([&](Operation *inner) {
    Value written;
    OperandRange indices = inner->getOperands().drop_front(0);
    if (auto other = dyn_cast<AccumulateOp>(inner)) {
      written = other.getDest();
      indices = other.getIndices();
    } else if (auto store = dyn_cast<memref::StoreOp>(inner)) {
      written = store.getMemRef();
      indices = store.getIndices();
    } else if (auto rmw = dyn_cast<memref::AtomicRMWOp>(inner)) {
      written = rmw.getMemref();
      indices = rmw.getIndices();
    } else if (isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::YieldOp,
                   scf::ConditionOp, htmpl::YieldOp>(inner)) {
      return;
    } else {
      auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
      if (!effects || effects.hasEffect<MemoryEffects::Write>() ||
          effects.hasEffect<MemoryEffects::Free>())
        safe = false;
      return;
    }
    if (written == dest)
      safe &= firstIndexIsRowOf(op, indices, scheme);
    else if (rootBuffer(written) == root)
      safe = false;
  });
  return safe;
}

/// The partition that makes some accumulate of `op` local: destination
/// blocks first, else edge types; none (Edge) when neither does.
AccessScheme partitionOf(TraversalOp op) {
  for (AccessScheme scheme : {AccessScheme::Dst, AccessScheme::EdgeType}) {
    bool gains = false;
    op.getBody().walk(
        [&](AccumulateOp acc) { gains |= isLocal(op, acc, scheme); });
    if (gains)
      return scheme;
  }
  return AccessScheme::Edge;
}

arith::AtomicRMWKind atomicKind(AccumulateOp acc) {
  bool isFloat = isa<FloatType>(acc.getValue().getType());
  if (acc.getKind() == htmpl::Reduction::Add)
    return isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
  return isFloat ? arith::AtomicRMWKind::maximumf : arith::AtomicRMWKind::maxs;
}

/// Replaces `acc` by a plain load-combine-store or an atomic update.
void lowerAccumulate(RewriterBase &rewriter, AccumulateOp acc, bool local) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(acc);
  Location loc = acc.getLoc();
  if (!local) {
    memref::AtomicRMWOp::create(rewriter, loc, atomicKind(acc), acc.getValue(),
                                acc.getDest(), acc.getIndices());
    rewriter.eraseOp(acc);
    return;
  }
  Value old =
      memref::LoadOp::create(rewriter, loc, acc.getDest(), acc.getIndices());
  Value value = acc.getValue(), combined;
  bool isFloat = isa<FloatType>(value.getType());
  if (acc.getKind() == htmpl::Reduction::Add)
    combined = isFloat ? Value(arith::AddFOp::create(rewriter, loc, old, value))
                       : Value(arith::AddIOp::create(rewriter, loc, old, value));
  else
    combined =
        isFloat ? Value(arith::MaximumFOp::create(rewriter, loc, old, value))
                : Value(arith::MaxSIOp::create(rewriter, loc, old, value));
  memref::StoreOp::create(rewriter, loc, combined, acc.getDest(),
                          acc.getIndices());
  rewriter.eraseOp(acc);
}

/// Lowers every accumulate of `op`: plain where one writer per row of
/// `partition` makes it local, else atomic. Returns the buffer of the first
/// local one, whose rows are the partition's.
Value lowerAccumulates(RewriterBase &rewriter, TraversalOp op,
                       AccessScheme partition) {
  SmallVector<std::pair<AccumulateOp, bool>> accumulates;
  Value partitioned;
  op.getBody().walk([&](AccumulateOp acc) {
    bool local = isLocal(op, acc, partition);
    accumulates.push_back({acc, local});
    if (local && !partitioned)
      partitioned = acc.getDest();
  });
  for (auto [acc, local] : accumulates)
    lowerAccumulate(rewriter, acc, local);
  return partitioned;
}

/// `(a0, a1) < (b0, b1)` lexicographically, on indices.
Value lexLess(OpBuilder &b, Location loc, Value a0, Value a1, Value b0,
              Value b1) {
  Value less =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a0, b0);
  Value equal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a0, b0);
  Value lessSecond =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a1, b1);
  return arith::OrIOp::create(
      b, loc, less, arith::AndIOp::create(b, loc, equal, lessSecond));
}

class CPUTraversalPass
    : public hector::impl::CPUTraversalBase<CPUTraversalPass> {
public:
  using CPUTraversalBase::CPUTraversalBase;

  void runOnOperation() override;

private:
  /// i1: are (etype, dst) sorted lexicographically? Computed once per pair
  /// of arrays where an earlier check dominates.
  Value sortedFlag(OpBuilder &b, Location loc, Value etype, Value dst,
                   Operation *at, DominanceInfo &dominance);
  /// i1: is compact_map[pair_eid[k]] non-decreasing in k? Cached likewise.
  Value pairSortedFlag(OpBuilder &b, Location loc, Value pairEid, Value map,
                       Operation *at, DominanceInfo &dominance);
  /// i1: no k in [0, length - 1) is `descending(k, k + 1)`; cached under
  /// (x, y) where an earlier check dominates `at`.
  Value orderFlag(OpBuilder &b, Location loc, Value x, Value y, Value length,
                  Operation *at, DominanceInfo &dominance,
                  function_ref<Value(OpBuilder &, Value, Value)> descending);
  void lowerPartitioned(RewriterBase &rewriter, TraversalOp op,
                        AccessScheme partition);
  void lowerPairBlocks(RewriterBase &rewriter, TraversalOp op);

  std::map<std::pair<void *, void *>, SmallVector<Value, 1>> flags;
};

Value CPUTraversalPass::sortedFlag(OpBuilder &b, Location loc, Value etype,
                                   Value dst, Operation *at,
                                   DominanceInfo &dominance) {
  return orderFlag(
      b, loc, etype, dst, dimOf(b, loc, dst, 0), at, dominance,
      [&](OpBuilder &b, Value e, Value next) {
        return lexLess(b, loc, loadIndex(b, loc, etype, next),
                       loadIndex(b, loc, dst, next),
                       loadIndex(b, loc, etype, e), loadIndex(b, loc, dst, e));
      });
}

Value CPUTraversalPass::pairSortedFlag(OpBuilder &b, Location loc,
                                       Value pairEid, Value map, Operation *at,
                                       DominanceInfo &dominance) {
  auto pairOf = [&](OpBuilder &b, Value k) {
    return loadIndex(b, loc, map, loadIndex(b, loc, pairEid, k));
  };
  return orderFlag(b, loc, pairEid, map, dimOf(b, loc, pairEid, 0), at,
                   dominance, [&](OpBuilder &b, Value k, Value next) {
                     return arith::CmpIOp::create(b, loc,
                                                  arith::CmpIPredicate::slt,
                                                  pairOf(b, next), pairOf(b, k));
                   });
}

Value CPUTraversalPass::orderFlag(
    OpBuilder &b, Location loc, Value x, Value y, Value length, Operation *at,
    DominanceInfo &dominance,
    function_ref<Value(OpBuilder &, Value, Value)> descending) {
  auto key = std::make_pair(x.getAsOpaquePointer(), y.getAsOpaquePointer());
  for (Value flag : flags[key])
    if (dominance.properlyDominates(flag, at))
      return flag;
  // flag = 1; every e with a descent from e to e + 1 clears it (an atomic
  // store: several iterations may).
  auto i32 = b.getI32Type();
  Value cell = memref::AllocaOp::create(b, loc, MemRefType::get({}, i32));
  memref::StoreOp::create(b, loc, arith::ConstantIntOp::create(b, loc, i32, 1),
                          cell, ValueRange{});
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  Value steps = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, length, c1), c0);
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                      ValueRange{steps}, ValueRange{c1});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value e = loop.getInductionVars()[0];
    Value next = arith::AddIOp::create(b, loc, e, c1);
    auto ifOp = scf::IfOp::create(b, loc, descending(b, e, next), false);
    b.setInsertionPointToStart(ifOp.thenBlock());
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::assign,
                                arith::ConstantIntOp::create(b, loc, i32, 0),
                                cell, ValueRange{});
  }
  Value flag = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      memref::LoadOp::create(b, loc, cell, ValueRange{}),
      arith::ConstantIntOp::create(b, loc, i32, 0));
  flags[key].push_back(flag);
  return flag;
}

/// The edge loop body: the traversal's body for edge `e`.
void inlineEdge(RewriterBase &rewriter, TraversalOp op, Location loc,
                Value e) {
  OperandRange adjacency = op.getAdjacency();
  Value src = adjacency[0], dst = adjacency[1], etype = adjacency[2];
  OpBuilder &b = rewriter;
  SmallVector<Value> args = templates::bodyArguments(
      b, loc, op, [&](AccessScheme scheme) -> Value {
        switch (scheme) {
        case AccessScheme::Edge:
          return e;
        case AccessScheme::Compact:
          return loadIndex(b, loc, op.getCompactMap(), e);
        case AccessScheme::Src:
          return loadIndex(b, loc, src, e);
        case AccessScheme::Dst:
          return loadIndex(b, loc, dst, e);
        case AccessScheme::EdgeType:
          return loadIndex(b, loc, etype, e);
        default:
          llvm_unreachable("scheme not valid on edges (verified)");
        }
      });
  templates::inlineBody(rewriter, op, args);
}

void CPUTraversalPass::lowerPartitioned(RewriterBase &rewriter, TraversalOp op,
                                        AccessScheme partition) {
  Location loc = op.getLoc();
  OperandRange adjacency = op.getAdjacency();
  Value src = adjacency[0], dst = adjacency[1], etype = adjacency[2];

  Value partitioned = lowerAccumulates(rewriter, op, partition);
  OpBuilder &b = rewriter;
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  Value edges = dimOf(b, loc, src, 0);

  if (partition == AccessScheme::EdgeType) {
    // One iteration per edge type: its edges are one run in the canonical
    // order, and its rows have no other writer.
    Value types = dimOf(b, loc, partitioned, 0);
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                        ValueRange{types}, ValueRange{c1});
    b.setInsertionPointToStart(loop.getBody());
    Value type = loop.getInductionVars()[0];
    auto before = [&](Value bound) {
      return [&, bound](OpBuilder &b, Value m) {
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                     loadIndex(b, loc, etype, m), bound);
      };
    };
    Value begin = lowerBound(b, loc, c0, edges, before(type));
    Value end = lowerBound(b, loc, begin, edges,
                           before(arith::AddIOp::create(b, loc, type, c1)));
    auto body = scf::ForOp::create(b, loc, begin, end, c1);
    b.setInsertionPoint(body.getBody()->getTerminator());
    inlineEdge(rewriter, op, loc, body.getInductionVar());
    rewriter.eraseOp(op);
    return;
  }

  Value nodes = dimOf(b, loc, partitioned, 0);
  // S = max(64, ceil(N / 1024)) nodes per block.
  Value size = arith::MaxSIOp::create(
      b, loc,
      arith::CeilDivSIOp::create(b, loc, nodes,
                                 constIndex(b, loc, kMaxBlocks)),
      constIndex(b, loc, kMinBlockNodes));
  Value blocks = arith::CeilDivSIOp::create(b, loc, nodes, size);
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                      ValueRange{blocks}, ValueRange{c1});
  b.setInsertionPointToStart(loop.getBody());
  Value first = arith::MulIOp::create(b, loc, loop.getInductionVars()[0], size);
  Value last = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, size), nodes);

  auto types = scf::WhileOp::create(
      b, loc, TypeRange{b.getIndexType()}, ValueRange{c0},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           args[0], edges);
        scf::ConditionOp::create(b, loc, more, args);
      },
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value start = args[0];
        Value type = loadIndex(b, loc, etype, start);
        auto before = [&](Value node) {
          return [&, node](OpBuilder &b, Value m) {
            return lexLess(b, loc, loadIndex(b, loc, etype, m),
                           loadIndex(b, loc, dst, m), type, node);
          };
        };
        Value begin = lowerBound(b, loc, start, edges, before(first));
        Value end = lowerBound(b, loc, begin, edges, before(last));
        auto body = scf::ForOp::create(b, loc, begin, end, c1);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(body.getBody()->getTerminator());
          inlineEdge(rewriter, op, loc, body.getInductionVar());
        }
        // The first edge of a later type.
        Value next = lowerBound(b, loc, end, edges, [&](OpBuilder &b, Value m) {
          return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                       loadIndex(b, loc, etype, m), type);
        });
        scf::YieldOp::create(b, loc, ValueRange{next});
      });
  (void)types;
  rewriter.eraseOp(op);
}

void CPUTraversalPass::lowerPairBlocks(RewriterBase &rewriter,
                                       TraversalOp op) {
  Location loc = op.getLoc();
  OperandRange adjacency = op.getAdjacency();
  Value pairEid = adjacency[3], map = op.getCompactMap();
  Value partitioned = lowerAccumulates(rewriter, op, AccessScheme::Compact);

  // Blocks of S = max(64, ceil(P / 1024)) pairs; block b runs the slots
  // whose pair lies in [b*S, b*S + S).
  OpBuilder &b = rewriter;
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  Value slots = dimOf(b, loc, pairEid, 0);
  Value pairs = dimOf(b, loc, partitioned, 0);
  Value size = arith::MaxSIOp::create(
      b, loc,
      arith::CeilDivSIOp::create(b, loc, pairs,
                                 constIndex(b, loc, kMaxBlocks)),
      constIndex(b, loc, kMinBlockPairs));
  Value blocks = arith::CeilDivSIOp::create(b, loc, pairs, size);
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{c0},
                                      ValueRange{blocks}, ValueRange{c1});
  b.setInsertionPointToStart(loop.getBody());
  Value first = arith::MulIOp::create(b, loc, loop.getInductionVars()[0], size);
  Value last = arith::AddIOp::create(b, loc, first, size);
  auto before = [&](Value bound) {
    return [&, bound](OpBuilder &b, Value k) {
      Value pair = loadIndex(b, loc, map, loadIndex(b, loc, pairEid, k));
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, pair,
                                   bound);
    };
  };
  Value begin = lowerBound(b, loc, c0, slots, before(first));
  Value end = lowerBound(b, loc, begin, slots, before(last));
  auto body = scf::ForOp::create(b, loc, begin, end, c1);
  b.setInsertionPoint(body.getBody()->getTerminator());
  inlineEdge(rewriter, op, loc,
             loadIndex(b, loc, pairEid, body.getInductionVar()));
  rewriter.eraseOp(op);
}

/// True when some accumulate of a pair-order traversal goes only into pair
/// rows, so that blocks of pairs make it local.
bool gainsFromPairBlocks(TraversalOp op) {
  bool gains = false;
  op.getBody().walk([&](AccumulateOp acc) {
    gains |= isLocal(op, acc, AccessScheme::Compact);
  });
  return gains;
}

void CPUTraversalPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<std::pair<TraversalOp, AccessScheme>> candidates;
  module.walk([&](TraversalOp op) {
    htmpl::Adjacency format = op.getAdjacencyFormat();
    if (op.getDomain() != htmpl::Domain::Edges ||
        (format != htmpl::Adjacency::COO && format != htmpl::Adjacency::Pairs))
      return;
    // Nested instances are left to htmpl-to-loops.
    bool nested = op->getParentOfType<TraversalOp>() != nullptr;
    op.getBody().walk([&](Operation *inner) {
      nested |= isa<TraversalOp, htmpl::GemmOp>(inner);
    });
    if (nested)
      return;
    if (format == htmpl::Adjacency::Pairs) {
      if (gainsFromPairBlocks(op))
        candidates.push_back({op, AccessScheme::Compact});
      return;
    }
    AccessScheme partition = partitionOf(op);
    if (partition != AccessScheme::Edge)
      candidates.push_back({op, partition});
  });

  IRRewriter rewriter(&getContext());
  for (auto [op, partition] : candidates) {
    DominanceInfo dominance(op->getParentOfType<func::FuncOp>());
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    OperandRange adjacency = op.getAdjacency();
    Value sorted =
        partition == AccessScheme::Compact
            ? pairSortedFlag(rewriter, loc, adjacency[3], op.getCompactMap(),
                             op, dominance)
            : sortedFlag(rewriter, loc, adjacency[2], adjacency[1], op,
                         dominance);
    auto branch = scf::IfOp::create(rewriter, loc, sorted,
                                    /*withElseRegion=*/true);
    // Unsorted: the traversal as it was, for htmpl-to-loops.
    rewriter.setInsertionPoint(branch.elseBlock()->getTerminator());
    rewriter.clone(*op);
    rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
    auto partitioned = cast<TraversalOp>(rewriter.clone(*op));
    rewriter.eraseOp(op);
    if (partition == AccessScheme::Compact)
      lowerPairBlocks(rewriter, partitioned);
    else
      lowerPartitioned(rewriter, partitioned, partition);
  }
}

} // namespace

