//===- TraversalToGPU.cpp - htmpl.traversal to GPU kernels ------*- C++ -*-===//
//
// The kernel skeletons of the traversal template (Traversal.h describes the
// two mappings; TraversalPlan.cpp picks one):
//
// - warp mapping, edges: lane group g of the grid (a warp, or a power-of-two
//   part of one: TraversalPlan::lanes) walks the edges (COO), CSR slots or
//   pair-order slots [g * C, g * C + C) in order (C = kEdgesPerGroup, more
//   when the receiving row is the edge type: chunkOfEdges). The
//   work is split by edges, not by destination nodes, so a hub with 100k
//   in-edges is spread over thousands of groups. In CSR order the
//   destination node of a slot is found once per group by a binary search
//   over row_ptr and then advanced. Accumulations into the receiving row
//   (destination node or edge type; in pair order the (source, edge type)
//   pair) go to a group-private row in shared memory; when that row changes
//   (and at the end of the chunk) the lanes flush it, one atomic per
//   touched element.
// - warp mapping, nodes: one lane group per node.
// - thread mapping: one thread per edge, CSR slot or node. Top-level
//   accumulations into the receiving row are combined across the lanes of a
//   warp with the same row, then one atomic per run.
//
// The body is inlined with its block arguments replaced by the resolved
// rows: edge id, compact_map[e], src[e], dst[e], etype[e], node id,
// node_types[n], and 0 for `whole`.
//
//===----------------------------------------------------------------------===//

#include "Traversal.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"

#include <array>

using namespace mlir;
using namespace hector;
using namespace hector::gpu;
using namespace hector::htmpl;

namespace {
/// Edges (or CSR slots) a lane group walks in order.
constexpr int64_t kEdgesPerGroup = 32;
/// Lane groups a traversal accumulating into edge-type rows is split into
/// (at least kEdgesPerGroup edges each): enough to fill an H100's 132 SMs
/// twice over with 16-lane groups.
constexpr int64_t kTypeReceiverGroups = 1 << 15;
/// Loops with fewer iterations (known statically) are unrolled rather than
/// split over the lanes of a warp.
constexpr uint64_t kMinLoopForLanes = 8;

/// The current instance, from which rows are resolved.
struct Instance {
  Value edge;    // COO: the edge id; CSR, pairs: resolved from the slot
  Value slot;    // CSR, pairs: the slot
  Value dstNode; // the destination node, when already known
  Value node;    // node traversals: the node id
};

/// The edge id of an edge instance: COO walks edge ids, CSR and pair order
/// slots whose edge is `eid[slot]` / `pair_eid[slot]`. Loaded once.
Value edgeOf(OpBuilder &b, Location loc, TraversalOp op, Instance &inst) {
  if (!inst.edge) {
    // CSR: row_ptr, src, eid, etype. Pairs: src, dst, etype, pair_eid.
    unsigned eid = op.getAdjacencyFormat() == Adjacency::CSR ? 2 : 3;
    inst.edge = loadIndex(b, loc, op.getAdjacency()[eid], inst.slot);
  }
  return inst.edge;
}

/// The destination node of an edge instance (COO and pair order read it at
/// the edge id; CSR slots know it).
Value dstOf(OpBuilder &b, Location loc, TraversalOp op, Instance &inst) {
  if (!inst.dstNode)
    inst.dstNode =
        loadIndex(b, loc, op.getAdjacency()[1], edgeOf(b, loc, op, inst));
  return inst.dstNode;
}

/// The edge type of an edge instance.
Value edgeTypeOf(OpBuilder &b, Location loc, TraversalOp op, Instance &inst) {
  OperandRange adjacency = op.getAdjacency();
  if (op.getAdjacencyFormat() == Adjacency::CSR)
    return loadIndex(b, loc, adjacency[3], inst.slot);
  return loadIndex(b, loc, adjacency[2], edgeOf(b, loc, op, inst));
}

/// The body arguments of one instance (the edge or node id, then one row
/// per operand), each scheme computed at most once and only when used.
SmallVector<Value> bodyArguments(OpBuilder &b, Location loc, TraversalOp op,
                                 Instance &inst) {
  OperandRange adjacency = op.getAdjacency();
  bool csr = op.getAdjacencyFormat() == Adjacency::CSR;
  auto rowOf = [&](AccessScheme scheme) -> Value {
    switch (scheme) {
    case AccessScheme::Edge:
      return edgeOf(b, loc, op, inst);
    case AccessScheme::Compact:
      return loadIndex(b, loc, op.getCompactMap(), edgeOf(b, loc, op, inst));
    case AccessScheme::Src:
      return csr ? loadIndex(b, loc, adjacency[1], inst.slot)
                 : loadIndex(b, loc, adjacency[0], edgeOf(b, loc, op, inst));
    case AccessScheme::Dst:
      return dstOf(b, loc, op, inst);
    case AccessScheme::EdgeType:
      return edgeTypeOf(b, loc, op, inst);
    case AccessScheme::Node:
      return inst.node;
    case AccessScheme::NodeType:
      return loadIndex(b, loc, op.getNodeTypes(), inst.node);
    case AccessScheme::Whole:
      break;
    }
    return constIndex(b, loc, 0);
  };
  return templates::bodyArguments(b, loc, op, rowOf);
}

/// The receiving row of the instance's buffered or reduced accumulations.
Value receiverRow(OpBuilder &b, Location loc, TraversalOp op,
                  const TraversalPlan &plan, Instance &inst) {
  switch (plan.receiver) {
  case AccessScheme::EdgeType:
    return edgeTypeOf(b, loc, op, inst);
  case AccessScheme::Compact:
    return loadIndex(b, loc, op.getCompactMap(), edgeOf(b, loc, op, inst));
  default:
    return dstOf(b, loc, op, inst);
  }
}

/// Every op of the body, nested ones included, in pre-order.
SmallVector<Operation *> bodyOps(TraversalOp op) {
  SmallVector<Operation *> ops;
  op.getBody().walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (!isa<YieldOp>(inner))
      ops.push_back(inner);
  });
  return ops;
}

SmallVector<AccumulateOp> accumulatesIn(ArrayRef<Operation *> ops) {
  SmallVector<AccumulateOp> accs;
  for (Operation *op : ops)
    if (auto acc = dyn_cast<AccumulateOp>(op))
      accs.push_back(acc);
  return accs;
}

/// Number of edges (COO), CSR slots or pair-order slots of an edge
/// traversal: the length of its second index array (src, or dst in COO and
/// pair order).
Value edgeCount(OpBuilder &b, Location loc, TraversalOp op) {
  return dimOf(b, loc, op.getAdjacency()[1], 0);
}

/// Node count of a CSR row pointer [N+1] (0 when empty).
Value csrNodeCount(OpBuilder &b, Location loc, TraversalOp op) {
  Value rowPtr = op.getAdjacency()[0];
  return maxIndex(b, loc,
                  b.createOrFold<arith::SubIOp>(loc, dimOf(b, loc, rowPtr, 0),
                                                constIndex(b, loc, 1)),
                  constIndex(b, loc, 0));
}

/// The lane group of `thread` (lanes per group: plan.lanes) and, in
/// `group`, the group's index in its block.
WarpContext groupContext(OpBuilder &b, Location loc, const TraversalPlan &plan,
                         Value thread, Value &group) {
  WarpContext context;
  context.lanes = plan.lanes;
  Value lanes = constIndex(b, loc, plan.lanes);
  context.lane = arith::RemUIOp::create(b, loc, thread, lanes);
  context.lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        context.lane, constIndex(b, loc, 0));
  group = arith::DivUIOp::create(b, loc, thread, lanes);
  // The group's lanes in its warp: `lanes` ones shifted to its first lane.
  if (plan.lanes >= kWarpSize) {
    context.mask = constI32(b, loc, -1);
    return context;
  }
  Value laneInWarp =
      arith::RemUIOp::create(b, loc, thread, constIndex(b, loc, kWarpSize));
  Value first = arith::IndexCastOp::create(
      b, loc, b.getI32Type(),
      arith::SubIOp::create(b, loc, laneInWarp, context.lane));
  context.mask = arith::ShLIOp::create(
      b, loc, constI32(b, loc, (1 << plan.lanes) - 1), first);
  return context;
}

/// Flushes this group's buffered destination rows into row `row` of their
/// destinations: one atomic per element that holds more than the identity,
/// then the element is reset.
void emitFlush(OpBuilder &b, Location loc, const TraversalPlan &plan,
               const WarpContext &context, Value row) {
  emitWarpSync(b, loc, context.mask);
  for (const BufferedDest &buffered : plan.buffered) {
    Value shared, base;
    std::tie(shared, base) = context.buffers.lookup(buffered.dest);
    auto type = cast<MemRefType>(buffered.dest.getType());
    Type element = type.getElementType();
    scf::ForOp::create(
        b, loc, context.lane, constIndex(b, loc, buffered.size),
        constIndex(b, loc, context.lanes), ValueRange{},
        [&](OpBuilder &b, Location loc, Value c, ValueRange) {
          Value at = arith::AddIOp::create(b, loc, base, c);
          Value value = memref::LoadOp::create(b, loc, shared, at);
          Value identity = identityOf(b, loc, buffered.kind, element);
          memref::StoreOp::create(b, loc, identity, shared, at);
          Value touched =
              isa<FloatType>(element)
                  ? Value(arith::CmpFOp::create(
                        b, loc, arith::CmpFPredicate::UNE, value, identity))
                  : Value(arith::CmpIOp::create(
                        b, loc, arith::CmpIPredicate::ne, value, identity));
          auto ifOp = scf::IfOp::create(b, loc, touched,
                                        /*withElseRegion=*/false);
          b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
          SmallVector<Value> indices(type.getRank());
          indices[0] = row;
          Value rest = c;
          for (int64_t d = type.getRank() - 1; d >= 1; --d) {
            Value size = constIndex(b, loc, type.getDimSize(d));
            indices[d] = arith::RemUIOp::create(b, loc, rest, size);
            rest = arith::DivUIOp::create(b, loc, rest, size);
          }
          emitAtomic(b, loc, atomicKind(buffered.kind, element), value,
                     buffered.dest, indices);
          b.setInsertionPointAfter(ifOp);
          scf::YieldOp::create(b, loc);
        });
  }
  emitWarpSync(b, loc, context.mask);
}

/// The edges one lane group walks. Rows of the edge type repeat for
/// thousands of edges, so a group flushes its shared rows only at the end of
/// its chunk: with kEdgesPerGroup edges that is one global atomic per
/// element every 32 edges, all of them on the few rows of the types (RGAT's
/// `Σ_e g_e h_dst`, 64-wide rows, took 3.4 ms on the mag shape, most of it
/// in those atomics). Where the rows hold at least a warp's worth of
/// elements the chunk grows with the edge count instead, to
/// ⌈E / kTypeReceiverGroups⌉ edges; narrower rows (HGT's per-head `μ`
/// gradient) flush a few atomics and gain nothing from fewer, longer walks
/// (measured 1-3% slower).
Value chunkOfEdges(OpBuilder &b, Location loc, const TraversalPlan &plan,
                   Value count) {
  Value least = constIndex(b, loc, kEdgesPerGroup);
  int64_t flushed = 0;
  for (const BufferedDest &buffered : plan.buffered)
    flushed += buffered.size;
  if (plan.receiver != AccessScheme::EdgeType || flushed < kWarpSize)
    return least;
  return maxIndex(
      b, loc, least,
      ceilDiv(b, loc, count, constIndex(b, loc, kTypeReceiverGroups)));
}

/// The operands of `op` whose rows are whole 16-byte chunks: 32-bit
/// elements, a static innermost size that is a multiple of kRowVector, and
/// at least two dimensions (graph arrays are read one index at a time).
SmallVector<Value> rowsOfWholeChunks(TraversalOp op) {
  SmallVector<Value> rows;
  auto consider = [&](Value operand) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || type.getRank() < 2 || type.getElementTypeBitWidth() != 32 ||
        ShapedType::isDynamic(type.getShape().back()) ||
        type.getShape().back() % kRowVector != 0 ||
        !type.getLayout().isIdentity() || llvm::is_contained(rows, operand))
      return;
    rows.push_back(operand);
  };
  llvm::for_each(op.getInputs(), consider);
  llvm::for_each(op.getOutputs(), consider);
  return rows;
}

/// Whether the only writes inside `loop` are plain updates of the group's
/// shared rows (plan.buffered). A store to a row in memory or an atomic
/// between the loads of a lane's run keeps LLVM from merging them (it cannot
/// tell that the buffers differ), and the run's strided scalar loads would
/// then cost more than the general kernel's.
bool onlyBufferedWrites(Operation *loop, const TraversalPlan &plan) {
  auto result = loop->walk([&](Operation *op) {
    if (auto acc = dyn_cast<AccumulateOp>(op)) {
      bool plain = llvm::any_of(plan.buffered, [&](const BufferedDest &b) {
        return b.dest == acc.getDest() && b.plain;
      });
      return plain ? WalkResult::advance() : WalkResult::interrupt();
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (effects ? effects.hasEffect<MemoryEffects::Write>()
                : !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Inside `launch`, reads `rows` through memref.assume_alignment (16
/// bytes): what lets LLVM's load/store vectorizer merge each lane's run of
/// kRowVector features into one 128-bit access. The host checked it.
void assumeRowsAligned(RewriterBase &rewriter, mlir::gpu::LaunchOp launch,
                       ArrayRef<Value> rows) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  for (Value row : rows) {
    auto assumed = memref::AssumeAlignmentOp::create(
        rewriter, launch.getLoc(), row, 16 /*bytes*/);
    rewriter.replaceUsesWithIf(row, assumed, [&](OpOperand &use) {
      return use.getOwner() != assumed &&
             launch->isProperAncestor(use.getOwner());
    });
  }
}

/// The 16-byte variant of a warp-mapped traversal: the row operands the
/// host checked, and the distributed loops that run in 16-byte runs.
struct RowVectors {
  SmallVector<Value> rows;
  llvm::SmallPtrSet<Operation *, 4> loops;
};

/// The distributed loops of `plan` that the 16-byte variant runs in runs of
/// kRowVector features: unrolled whole runs, and no write but the group's
/// shared rows in between.
llvm::SmallPtrSet<Operation *, 4> vectorLoopsOf(const TraversalPlan &plan) {
  llvm::SmallPtrSet<Operation *, 4> loops;
  for (Operation *loop : plan.distributed)
    if (runsVectorRows(cast<scf::ForOp>(loop), plan.lanes) &&
        onlyBufferedWrites(loop, plan))
      loops.insert(loop);
  return loops;
}

void lowerWarpEdges(RewriterBase &rewriter, TraversalOp op,
                    const TraversalPlan &plan, const RowVectors *vectors) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  int64_t threads = op.getLaunchBounds(), groups = threads / plan.lanes;
  bool csr = op.getAdjacencyFormat() == Adjacency::CSR;
  SmallVector<Operation *> ops = bodyOps(op);
  SmallVector<MemRefType> sharedTypes;
  for (const BufferedDest &buffered : plan.buffered)
    sharedTypes.push_back(workgroupType(
        {groups * groupRowStride(buffered.size, plan.lanes)},
        cast<MemRefType>(buffered.dest.getType()).getElementType()));

  Value count = edgeCount(b, loc, op);
  Value numNodes = csr ? csrNodeCount(b, loc, op) : Value();
  Value chunk = chunkOfEdges(b, loc, plan, count);
  Launch launch = createLaunch(
      b, loc,
      ceilDiv(b, loc, count,
              arith::MulIOp::create(b, loc, chunk, constIndex(b, loc, groups))),
      constIndex(b, loc, 1), constIndex(b, loc, 1), threads, sharedTypes);
  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  Value group;
  WarpContext context = groupContext(b, loc, plan, launch.thread, group);
  if (vectors)
    context.vectorLoops = vectors->loops;
  Value globalGroup = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.blockX, constIndex(b, loc, groups)),
      group);
  Value begin = arith::MulIOp::create(b, loc, globalGroup, chunk);
  Value end =
      minIndex(b, loc, arith::AddIOp::create(b, loc, begin, chunk), count);

  bool buffering = !plan.buffered.empty();
  for (size_t i = 0; i < plan.buffered.size(); ++i) {
    const BufferedDest &buffered = plan.buffered[i];
    Value shared = launch.shared[i];
    Value base = arith::MulIOp::create(
        b, loc, group,
        constIndex(b, loc, groupRowStride(buffered.size, plan.lanes)));
    context.buffers[buffered.dest] = {shared, base};
    Type element = cast<MemRefType>(buffered.dest.getType()).getElementType();
    scf::ForOp::create(
        b, loc, context.lane, constIndex(b, loc, buffered.size),
        constIndex(b, loc, plan.lanes), ValueRange{},
        [&](OpBuilder &b, Location loc, Value c, ValueRange) {
          memref::StoreOp::create(
              b, loc, identityOf(b, loc, buffered.kind, element), shared,
              ValueRange{arith::AddIOp::create(b, loc, base, c)});
          scf::YieldOp::create(b, loc);
        });
  }
  if (buffering)
    emitWarpSync(b, loc, context.mask);

  // Loop-carried: the destination of the buffered rows (-1: none yet) and,
  // in CSR order, the destination node of the current slot.
  SmallVector<Value> inits;
  if (buffering)
    inits.push_back(constIndex(b, loc, -1));
  if (csr)
    inits.push_back(
        searchOffsets(b, loc, op.getAdjacency()[0], numNodes, begin));
  Operation *yield = nullptr;
  Instance inst;
  auto loop = scf::ForOp::create(
      b, loc, begin, end, c1, inits,
      [&](OpBuilder &b, Location loc, Value e, ValueRange carried) {
        SmallVector<Value> next;
        if (csr) {
          // Advance to the node whose slots contain e (skipping empty rows).
          Value rowPtr = op.getAdjacency()[0];
          Type indexType = b.getIndexType();
          auto advance = scf::WhileOp::create(
              b, loc, TypeRange{indexType}, ValueRange{carried.back()},
              [&](OpBuilder &b, Location loc, ValueRange args) {
                Value after = arith::AddIOp::create(b, loc, args[0], c1);
                Value inside = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::slt, after, numNodes);
                Value start = loadIndex(b, loc, rowPtr,
                                        minIndex(b, loc, after, numNodes));
                Value past = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::sle, start, e);
                scf::ConditionOp::create(
                    b, loc, arith::AndIOp::create(b, loc, inside, past), args);
              },
              [&](OpBuilder &b, Location loc, ValueRange args) {
                scf::YieldOp::create(
                    b, loc,
                    ValueRange{arith::AddIOp::create(b, loc, args[0], c1)});
              });
          inst.slot = e;
          inst.dstNode = advance.getResult(0);
        } else if (op.getAdjacencyFormat() == Adjacency::Pairs) {
          inst.slot = e;
        } else {
          inst.edge = e;
        }
        Value key;
        if (buffering) {
          key = receiverRow(b, loc, op, plan, inst);
          Value current = carried.front();
          Value moved = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, key,
                                    current),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, current,
                                    c0));
          auto ifOp =
              scf::IfOp::create(b, loc, moved, /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
          emitFlush(b, loc, plan, context, current);
        }
        if (buffering)
          next.push_back(key);
        if (csr)
          next.push_back(inst.dstNode);
        yield = scf::YieldOp::create(b, loc, next);
      });
  rewriter.setInsertionPoint(yield);
  SmallVector<Value> args = bodyArguments(rewriter, loc, op, inst);
  inlineBody(rewriter, op, args);

  if (buffering) {
    rewriter.setInsertionPointAfter(loop);
    Value last = loop.getResult(0);
    auto ifOp = scf::IfOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, last,
                              c0),
        /*withElseRegion=*/false);
    rewriter.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    emitFlush(rewriter, loc, plan, context, last);
  }
  rewriteWarpBody(rewriter, plan, ops, context);
  if (vectors)
    assumeRowsAligned(rewriter, launch.op, vectors->rows);
}

void lowerWarpNodes(RewriterBase &rewriter, TraversalOp op,
                    const TraversalPlan &plan, const RowVectors *vectors) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  int64_t threads = op.getLaunchBounds(), groups = threads / plan.lanes;
  SmallVector<Operation *> ops = bodyOps(op);
  Value count = dimOf(b, loc, nodeCountSource(op), 0);
  Launch launch =
      createLaunch(b, loc, ceilDiv(b, loc, count, constIndex(b, loc, groups)),
                   constIndex(b, loc, 1), constIndex(b, loc, 1), threads);
  Value group;
  WarpContext context = groupContext(b, loc, plan, launch.thread, group);
  if (vectors)
    context.vectorLoops = vectors->loops;
  Value node = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.blockX, constIndex(b, loc, groups)),
      group);
  auto ifOp = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, node, count),
      /*withElseRegion=*/false);
  rewriter.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Instance inst;
  inst.node = node;
  SmallVector<Value> args = bodyArguments(rewriter, loc, op, inst);
  inlineBody(rewriter, op, args);
  rewriteWarpBody(rewriter, plan, ops, context);
  if (vectors)
    assumeRowsAligned(rewriter, launch.op, vectors->rows);
}

/// The instance of the thread whose instance id is `id`.
Instance threadInstance(RewriterBase &rewriter, Location loc, TraversalOp op,
                        Value id, Value numNodes) {
  Instance inst;
  if (op.getDomain() != Domain::Edges) {
    inst.node = id;
  } else if (op.getAdjacencyFormat() == Adjacency::CSR) {
    inst.slot = id;
    inst.dstNode =
        searchOffsets(rewriter, loc, op.getAdjacency()[0], numNodes, id);
  } else if (op.getAdjacencyFormat() == Adjacency::Pairs) {
    inst.slot = id;
  } else {
    inst.edge = id;
  }
  return inst;
}

/// What one instance gives the reduced accumulations: their values, the
/// receiving row and each one's other indices (invariant, but possibly
/// computed in the body).
struct ReducedValues {
  SmallVector<Value> values;
  Value row;
  SmallVector<SmallVector<Value>> rest;
};

/// Splits results laid out as reduceInstance yields them: values, row,
/// indices.
ReducedValues splitReduced(ValueRange results, ArrayRef<AccumulateOp> reduced) {
  ReducedValues split;
  split.values.assign(results.begin(), results.begin() + reduced.size());
  split.row = results[reduced.size()];
  unsigned next = reduced.size() + 1;
  for (AccumulateOp acc : reduced) {
    unsigned count = acc.getIndices().size() - 1;
    split.rest.emplace_back(results.slice(next, count));
    next += count;
  }
  return split;
}

/// Flattens `reduced` in reduceInstance's layout.
SmallVector<Value> joinReduced(const ReducedValues &reduced) {
  SmallVector<Value> joined(reduced.values);
  joined.push_back(reduced.row);
  for (const SmallVector<Value> &indices : reduced.rest)
    llvm::append_range(joined, indices);
  return joined;
}

/// What an instance-less lane gives: identities, row -1, indices 0.
ReducedValues noInstance(OpBuilder &b, Location loc,
                         ArrayRef<AccumulateOp> reduced) {
  ReducedValues none;
  for (AccumulateOp acc : reduced) {
    none.values.push_back(
        identityOf(b, loc, acc.getKind(), acc.getValue().getType()));
    none.rest.emplace_back(acc.getIndices().size() - 1, constIndex(b, loc, 0));
  }
  none.row = constIndex(b, loc, -1);
  return none;
}

/// Inlines the body for instance `id` in a branch taken when `valid`, which
/// yields the reduced accumulations' values, row and other indices instead
/// of accumulating them; without an instance it yields identities, row -1
/// and 0.
ReducedValues reduceInstance(RewriterBase &rewriter, Location loc,
                             TraversalOp op, const TraversalPlan &plan,
                             Value id, Value valid, Value numNodes) {
  ArrayRef<AccumulateOp> reduced = plan.reduced;
  SmallVector<Type> types;
  for (AccumulateOp acc : reduced)
    types.push_back(acc.getValue().getType());
  types.push_back(rewriter.getIndexType());
  for (AccumulateOp acc : reduced)
    types.append(acc.getIndices().size() - 1, rewriter.getIndexType());
  auto ifOp = scf::IfOp::create(rewriter, loc, types, valid,
                                /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(ifOp.thenBlock());
  Instance inst = threadInstance(rewriter, loc, op, id, numNodes);
  Value key = receiverRow(rewriter, loc, op, plan, inst);
  inlineBody(rewriter, op, bodyArguments(rewriter, loc, op, inst));
  SmallVector<Value> yielded;
  for (AccumulateOp acc : reduced)
    yielded.push_back(acc.getValue());
  yielded.push_back(key);
  for (AccumulateOp acc : reduced)
    llvm::append_range(yielded, acc.getIndices().drop_front());
  scf::YieldOp::create(rewriter, loc, yielded);

  rewriter.setInsertionPointToEnd(ifOp.elseBlock());
  scf::YieldOp::create(rewriter, loc,
                       joinReduced(noInstance(rewriter, loc, reduced)));
  return splitReduced(ifOp.getResults(), reduced);
}

/// Thread mapping into edge-type rows. Each lane walks `k` edges strided by
/// the warp (warp w covers the 32k edges from 32k·w, so every step's loads
/// stay coalesced) and keeps the sum of its current row in registers,
/// adding it atomically only when its row changes (at type boundaries);
/// after the walk the warp combines its lanes' sums (segmented reduction)
/// before one atomic per row. One edge per thread would issue one atomic
/// per warp of 32 edges, all of them on the few type rows (HGT's μ gradient
/// on the mag shape: 660 k atomics on 4 addresses, 1.2 ms).
/// k = max(1, ⌈E / kTypeReceiverGroups / 32⌉).
void lowerThreadsIntoTypeRows(RewriterBase &rewriter, TraversalOp op,
                              const TraversalPlan &plan, Value count,
                              Value numNodes) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  ArrayRef<AccumulateOp> reduced = plan.reduced;
  Value warp = constIndex(b, loc, kWarpSize);
  Value steps = maxIndex(
      b, loc, constIndex(b, loc, 1),
      ceilDiv(b, loc, count,
              constIndex(b, loc, kTypeReceiverGroups * kWarpSize)));
  Value span = arith::MulIOp::create(b, loc, steps, warp);
  Value lanes = arith::MulIOp::create(b, loc, ceilDiv(b, loc, count, span), warp);
  FlatLaunch flat = createFlatLaunch(b, loc, lanes, op.getLaunchBounds());
  Value lane = arith::RemUIOp::create(b, loc, flat.id, warp);
  Value first = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, flat.id, warp),
                            span),
      lane);

  Value c0 = constIndex(b, loc, 0), c1 = constIndex(b, loc, 1);
  auto walk = scf::ForOp::create(b, loc, c0, steps, c1,
                                 joinReduced(noInstance(b, loc, reduced)));
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(walk.getBody());
    ReducedValues held = splitReduced(walk.getRegionIterArgs(), reduced);
    Value e = arith::AddIOp::create(
        b, loc, first,
        arith::MulIOp::create(b, loc, walk.getInductionVar(), warp));
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, e, count);
    ReducedValues mine =
        reduceInstance(rewriter, loc, op, plan, e, inside, numNodes);
    // A new row: the held sum goes to memory, the new value is held.
    Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       mine.row, held.row);
    Value moved = arith::AndIOp::create(
        b, loc,
        arith::AndIOp::create(
            b, loc, inside,
            arith::XOrIOp::create(
                b, loc, same,
                arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1))),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, held.row,
                              c0));
    auto flush = scf::IfOp::create(b, loc, moved, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard inner(rewriter);
      rewriter.setInsertionPoint(flush.thenBlock()->getTerminator());
      for (size_t i = 0; i < reduced.size(); ++i) {
        AccumulateOp acc = reduced[i];
        SmallVector<Value> indices{held.row};
        llvm::append_range(indices, held.rest[i]);
        emitAtomic(b, loc, atomicKind(acc.getKind(), held.values[i].getType()),
                   held.values[i], acc.getDest(), indices);
      }
    }
    // Without an edge the held row stays; on the same row the values add.
    ReducedValues next = held;
    for (size_t i = 0; i < reduced.size(); ++i) {
      Value added = combine(b, loc, AccumulateOp(reduced[i]).getKind(),
                            held.values[i], mine.values[i]);
      next.values[i] = arith::SelectOp::create(
          b, loc, inside,
          arith::SelectOp::create(b, loc, same, added, mine.values[i]),
          held.values[i]);
      for (auto [j, index] : llvm::enumerate(mine.rest[i]))
        next.rest[i][j] =
            arith::SelectOp::create(b, loc, inside, index, held.rest[i][j]);
    }
    next.row = arith::SelectOp::create(b, loc, inside, mine.row, held.row);
    scf::YieldOp::create(b, loc, joinReduced(next));
  }
  rewriter.setInsertionPointAfter(walk);
  ReducedValues held = splitReduced(walk.getResults(), reduced);
  emitSegmentedAccumulates(rewriter, loc, lane, held.row, reduced, held.values,
                           held.rest);
}

void lowerThreads(RewriterBase &rewriter, TraversalOp op,
                  const TraversalPlan &plan) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  int64_t threads = op.getLaunchBounds();
  bool edges = op.getDomain() == Domain::Edges;
  bool csr = op.getAdjacencyFormat() == Adjacency::CSR;
  SmallVector<Operation *> ops = bodyOps(op);
  Value count =
      edges ? edgeCount(b, loc, op) : dimOf(b, loc, nodeCountSource(op), 0);
  Value numNodes = csr ? csrNodeCount(b, loc, op) : Value();

  ArrayRef<AccumulateOp> reduced = plan.reduced;
  SmallVector<AccumulateOp> others;
  for (AccumulateOp acc : accumulatesIn(ops))
    if (!llvm::is_contained(reduced, acc))
      others.push_back(acc);

  if (!reduced.empty() && plan.receiver == AccessScheme::EdgeType) {
    lowerThreadsIntoTypeRows(rewriter, op, plan, count, numNodes);
  } else {
    FlatLaunch flat = createFlatLaunch(b, loc, count, threads);
    if (reduced.empty()) {
      auto ifOp =
          scf::IfOp::create(b, loc, flat.inside, /*withElseRegion=*/false);
      rewriter.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Instance inst = threadInstance(rewriter, loc, op, flat.id, numNodes);
      inlineBody(rewriter, op, bodyArguments(rewriter, loc, op, inst));
      lowerAccumulatesToAtomics(rewriter, others);
      return;
    }
    ReducedValues mine = reduceInstance(rewriter, loc, op, plan, flat.id,
                                        flat.inside, numNodes);
    Value lane = arith::RemUIOp::create(rewriter, loc, flat.launch.thread,
                                        constIndex(rewriter, loc, kWarpSize));
    emitSegmentedAccumulates(rewriter, loc, lane, mine.row, reduced,
                             mine.values, mine.rest);
  }
  for (AccumulateOp acc : reduced)
    rewriter.eraseOp(acc);
  lowerAccumulatesToAtomics(rewriter, others);
}
/// Fully unrolls the body's loops with a static trip count below
/// kMinLoopForLanes, innermost first: head loops (1 to 8 heads) and short
/// feature loops. A warp would leave most lanes idle on them; unrolled, a
/// head loop's feature loops become the lanes' work and its scalar
/// statements warp-uniform code, and a body left without a long loop runs
/// one instance per thread, with its accumulations at the top level where
/// the warp can reduce them.
void unrollShortLoops(TraversalOp op) {
  SmallVector<scf::ForOp> loops;
  op.getBody().walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops) {
    std::optional<APInt> trips = loop.getStaticTripCount();
    if (trips && trips->getZExtValue() < kMinLoopForLanes)
      (void)loopUnrollFull(loop);
  }
}
/// Lets the float math of the body contract (a multiply feeding an add
/// becomes one fma): the dot products and weighted sums of a traversal are
/// then one instruction per feature instead of two, and round once instead
/// of twice. The CPU lowering keeps its own flags.
void allowContraction(TraversalOp op) {
  MLIRContext *context = op.getContext();
  op.getBody().walk([&](arith::ArithFastMathInterface math) {
    arith::FastMathFlags flags = math.getFastMathFlagsAttr().getValue();
    math->setAttr(math.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      context, flags | arith::FastMathFlags::contract));
  });
}
/// Replaces one planned instance by its kernel (the 16-byte variant when
/// `vectors` is given) and erases it.
void lowerPlanned(RewriterBase &rewriter, TraversalOp op,
                  const TraversalPlan &plan, const RowVectors *vectors) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  if (plan.mode == TraversalMode::Thread)
    lowerThreads(rewriter, op, plan);
  else if (op.getDomain() == Domain::Nodes)
    lowerWarpNodes(rewriter, op, plan, vectors);
  else
    lowerWarpEdges(rewriter, op, plan, vectors);
  rewriter.eraseOp(op);
}
} // namespace

LogicalResult hector::gpu::checkTraversal(TraversalOp op, int64_t lanes) {
  return planTraversal(op, lanes);
}

void hector::gpu::lowerTraversal(RewriterBase &rewriter, TraversalOp op,
                                 int64_t lanes) {
  unrollShortLoops(op);
  allowContraction(op);
  FailureOr<TraversalPlan> plan = planTraversal(op, lanes); // checked before
  SmallVector<Value> rows = rowsOfWholeChunks(op);
  if (plan->mode == TraversalMode::Thread || rows.empty() ||
      vectorLoopsOf(*plan).empty()) {
    lowerPlanned(rewriter, op, *plan, nullptr);
    return;
  }
  // Two kernels, the host picking per call: the 16-byte variant where every
  // row operand starts on a 16-byte boundary (rows of a multiple of 4
  // floats then all do), else the general one.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  SmallVector<Value> conds;
  for (Value row : rows)
    conds.push_back(startsAligned(rewriter, loc, row));
  auto ifOp = scf::IfOp::create(rewriter, loc, andAll(rewriter, loc, conds),
                                /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  auto vectorOp = cast<TraversalOp>(rewriter.clone(*op));
  FailureOr<TraversalPlan> vectorPlan = planTraversal(vectorOp, lanes);
  RowVectors vectors{rows, vectorLoopsOf(*vectorPlan)};
  lowerPlanned(rewriter, vectorOp, *vectorPlan, &vectors);
  rewriter.moveOpBefore(op, ifOp.elseBlock()->getTerminator());
  lowerPlanned(rewriter, op, *plan, nullptr);
}
