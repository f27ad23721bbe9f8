//===- TraversalPlan.cpp - choose the mapping of a traversal ----*- C++ -*-===//
//
// Decides, before the IR changes, how a traversal runs on the GPU (see
// Traversal.h) and rejects what cannot run there.
//
// The warp mapping runs the code outside the distributed loops on every lane
// and lets lane 0 alone write; lanes split the iterations of the
// distributed loops. That is only the sequential meaning of the body when
// no lane can read what another lane wrote in the same instance. The plan
// therefore takes the warp mapping only when:
//  - every op with memory effects is a load, a store, an accumulate or an
//    atomic whose result is unused;
//  - every buffer that the body both reads and writes is accessed only
//    inside one distributed loop, always at the same element, and that
//    element's indices name the loop's induction variable (so each element
//    belongs to one iteration, hence to one lane);
//  - a buffer the body only stores to is stored either from warp-uniform
//    code alone, or from distributed loops alone, each loop at one element
//    that names its variable (with a group barrier after each loop when
//    there are several, so that their stores land in program order);
//  - some innermost loop can be distributed: its carried values, if any,
//    are reductions (acc = acc op x, with op associative and commutative)
//    of 32-bit values that the warp can combine with shuffles.
// Everything else takes the thread mapping, which runs the body unchanged.
//
//===----------------------------------------------------------------------===//

#include "Traversal.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace hector;
using namespace hector::gpu;
using namespace hector::htmpl;

namespace {
/// Per warp, shared memory for the buffered destination rows (of the 48 KiB
/// a block may use without opt-in).
constexpr int64_t kMaxBufferBytesPerBlock = 32 * 1024;
/// Largest destination row (elements) gathered in shared memory.
constexpr int64_t kMaxBufferedRow = 1024;
/// The warp mapping gives each lane at most this many iterations of the
/// longest feature loop, with at least kMinLanes lanes per instance
/// (measured on an H100, docs/gpu-templates.md: half warps on 64-wide rows
/// beat whole warps by up to 10%; 8 or 4 lanes lose, their scalar loads
/// touching 4 or 8 rows per instruction).
constexpr int64_t kIterationsPerLane = 4;
constexpr int64_t kMinLanes = 16;

/// The memref a view is taken of, through any chain of view-like ops.
Value rootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// The memref an access reads or writes, its indices, and whether it
/// writes; null memref for ops that are not accesses.
struct Access {
  Operation *op = nullptr;
  Value memref;
  OperandRange indices{nullptr, 0};
  bool writes = false;
};

std::optional<Access> getAccess(Operation *op) {
  Access access;
  access.op = op;
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    access.memref = load.getMemRef();
    access.indices = load.getIndices();
  } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
    access.memref = store.getMemRef();
    access.indices = store.getIndices();
    access.writes = true;
  } else if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op)) {
    access.memref = rmw.getMemref();
    access.indices = rmw.getIndices();
    access.writes = true;
  } else if (auto acc = dyn_cast<AccumulateOp>(op)) {
    access.memref = acc.getDest();
    access.indices = acc.getIndices();
    access.writes = true;
  } else {
    return std::nullopt;
  }
  return access;
}

/// A body value up to the identity of row arguments: two row arguments with
/// the same access scheme hold the same row (the edge or node id counts as
/// the `edge` or `node` scheme).
struct Canonical {
  TraversalOp op;
  Value canonical(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    Block *body = &op.getBody().front();
    if (!arg || arg.getOwner() != body)
      return v;
    AccessScheme scheme = schemeOf(arg.getArgNumber());
    for (BlockArgument other : body->getArguments())
      if (schemeOf(other.getArgNumber()) == scheme)
        return other;
    return v;
  }
  AccessScheme schemeOf(unsigned argNumber) {
    if (argNumber == 0)
      return op.getDomain() == Domain::Edges ? AccessScheme::Edge
                                             : AccessScheme::Node;
    return op.getScheme(argNumber - 1);
  }
  bool isRow(Value v, AccessScheme scheme) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &op.getBody().front() &&
           schemeOf(arg.getArgNumber()) == scheme;
  }
  /// Same value, or the same pure computation of equivalent values (the
  /// lowering recomputes indices such as `h * 16 + f` at every use).
  bool equivalent(Value a, Value b, int depth = 8) {
    if (canonical(a) == canonical(b))
      return true;
    Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
    if (depth == 0 || !x || !y || !isPureLeaf(x) || !isPureLeaf(y) ||
        cast<OpResult>(a).getResultNumber() !=
            cast<OpResult>(b).getResultNumber())
      return false;
    return OperationEquivalence::isEquivalentTo(
        x, y,
        [&](Value l, Value r) { return success(equivalent(l, r, depth - 1)); },
        /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
  }
  bool sameIndices(OperandRange a, OperandRange b) {
    if (a.size() != b.size())
      return false;
    for (auto [x, y] : llvm::zip(a, b))
      if (!equivalent(x, y))
        return false;
    return true;
  }
  static bool isPureLeaf(Operation *op) {
    return op->getNumRegions() == 0 && isPure(op);
  }
};

/// True when `v` is defined outside `region`'s parent op.
bool definedOutside(Value v, Operation *parent) {
  return !parent->isAncestor(v.getParentRegion()->getParentOp());
}

/// True when `v` has one value for all of `scope`: defined outside it, or a
/// pure computation inside it from such values (constants included; the
/// lowering does not hoist them).
bool isInvariant(Value v, Operation *scope, int depth = 8) {
  if (definedOutside(v, scope))
    return true;
  Operation *def = v.getDefiningOp();
  if (depth == 0 || !def || !Canonical::isPureLeaf(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isInvariant(operand, scope, depth - 1);
  });
}

} // namespace

Operation *hector::gpu::matchReduction(scf::ForOp loop, unsigned i) {
  BlockArgument acc = loop.getRegionIterArgs()[i];
  Type type = acc.getType();
  if (!(type.isF32() || type.isInteger(32)) || !acc.hasOneUse())
    return nullptr;
  Operation *combiner = *acc.getUsers().begin();
  if (combiner->getBlock() != loop.getBody() ||
      !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp, arith::AddIOp, arith::MulIOp,
           arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp,
           arith::AndIOp, arith::OrIOp, arith::XOrIOp>(combiner))
    return nullptr;
  Value next = loop.getBody()->getTerminator()->getOperand(i);
  if (next != combiner->getResult(0) || !next.hasOneUse())
    return nullptr;
  return combiner;
}

namespace {
/// An innermost loop whose iterations can be split over lanes.
bool isDistributable(scf::ForOp loop) {
  bool nested = false;
  loop.getBody()->walk([&](LoopLikeOpInterface) { nested = true; });
  if (nested)
    return false;
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i)
    if (!matchReduction(loop, i))
      return false;
  return true;
}

/// Element count of a destination row (all dims but the first, static).
std::optional<int64_t> staticRowSize(Value dest) {
  auto type = cast<MemRefType>(dest.getType());
  if (type.getRank() < 1)
    return std::nullopt;
  int64_t size = 1;
  for (int64_t d = 1; d < type.getRank(); ++d) {
    if (type.isDynamicDim(d))
      return std::nullopt;
    size *= type.getDimSize(d);
    if (size > kMaxBufferedRow)
      return std::nullopt;
  }
  return size;
}

/// True when `v` differs in every iteration of `loop`: the induction
/// variable, plus or minus an invariant, times a non-zero constant.
bool followsIv(Value v, scf::ForOp loop, int depth = 8) {
  if (v == loop.getInductionVar())
    return true;
  Operation *def = v.getDefiningOp();
  if (depth == 0 || !def)
    return false;
  auto follows = [&](Value x) { return followsIv(x, loop, depth - 1); };
  auto invariant = [&](Value x) { return isInvariant(x, loop); };
  if (auto add = dyn_cast<arith::AddIOp>(def))
    return (follows(add.getLhs()) && invariant(add.getRhs())) ||
           (follows(add.getRhs()) && invariant(add.getLhs()));
  if (auto sub = dyn_cast<arith::SubIOp>(def))
    return follows(sub.getLhs()) && invariant(sub.getRhs());
  if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    auto nonZero = [](Value x) {
      std::optional<int64_t> c = getConstantIntValue(x);
      return c && *c != 0;
    };
    return (follows(mul.getLhs()) && nonZero(mul.getRhs())) ||
           (follows(mul.getRhs()) && nonZero(mul.getLhs()));
  }
  return false;
}

/// True when `indices` name a different element in every iteration of
/// `loop`: one index follows the induction variable, the others are
/// loop-invariant.
bool injectiveIn(ValueRange indices, scf::ForOp loop) {
  int varying = 0;
  for (Value index : indices) {
    if (followsIv(index, loop))
      ++varying;
    else if (!isInvariant(index, loop))
      return false;
  }
  return varying == 1;
}

bool isSharedAtomicType(Type type) {
  return type.isF32() || type.isF64() || type.isInteger(32) ||
         type.isInteger(64);
}
} // namespace

scf::ForOp hector::gpu::enclosingDistributed(Operation *op,
                                             const TraversalPlan &plan) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (plan.distributed.contains(p))
      return cast<scf::ForOp>(p);
  return {};
}

Value hector::gpu::nodeCountSource(TraversalOp op) {
  if (Value types = op.getNodeTypes())
    return types;
  unsigned index = 0;
  for (Value operand : llvm::concat<Value>(op.getInputs(), op.getOutputs()))
    if (op.getScheme(index++) == AccessScheme::Node)
      return operand;
  return {};
}

namespace {
/// Lanes per instance of the warp mapping: the fewest (a power of two, at
/// least kMinLanes) that leave each lane at most kIterationsPerLane
/// iterations of the longest distributed loop; a loop of unknown length
/// (over the edges of a node, say) gets the whole warp.
int64_t chooseLanes(const TraversalPlan &plan) {
  uint64_t longest = 0;
  for (Operation *op : plan.distributed) {
    std::optional<APInt> trips = cast<scf::ForOp>(op).getStaticTripCount();
    if (!trips)
      return kWarpSize;
    longest = std::max(longest, trips->getZExtValue());
  }
  int64_t lanes = kMinLanes;
  while (lanes < kWarpSize &&
         static_cast<uint64_t>(lanes * kIterationsPerLane) < longest)
    lanes *= 2;
  return lanes;
}
/// Stores into a buffer the body never reads, from one or more distributed
/// loops (a head loop unrolled into one feature loop per head, say): safe
/// when, within each loop, every store names one element that follows the
/// loop variable, so that each element of a loop belongs to one lane. Two
/// loops may still name the same element, which the sequential body writes
/// in loop order; the group therefore synchronises after each such loop
/// (`nvvm.bar.warp.sync` orders the lanes' memory accesses), so the later
/// loop's store lands last.
bool planStoresFromLoops(ArrayRef<const Access *> stores, TraversalPlan &plan,
                         Canonical &canon) {
  llvm::SmallMapVector<Operation *, const Access *, 4> firstOfLoop;
  for (const Access *a : stores) {
    scf::ForOp loop = enclosingDistributed(a->op, plan);
    if (!loop || !isa<memref::StoreOp>(a->op) ||
        a->memref != stores.front()->memref)
      return false;
    auto [it, inserted] = firstOfLoop.insert({loop, a});
    if (inserted ? !injectiveIn(a->indices, loop)
                 : !canon.sameIndices(a->indices, it->second->indices))
      return false;
  }
  if (firstOfLoop.size() > 1)
    for (auto &[loop, first] : firstOfLoop)
      plan.syncAfterStores.insert(loop);
  return true;
}

/// The rows that repeat on consecutive edges of an adjacency, whose
/// accumulations a lane group can gather before its atomics: in COO and CSR
/// order the destination (edges sorted by (type, destination)) and the edge
/// type; in pair order the (source, edge type) pair and the edge type
/// (pairs are sorted by (type, source)).
ArrayRef<AccessScheme> receivingSchemes(Adjacency format) {
  static const AccessScheme byDestination[] = {AccessScheme::Dst,
                                               AccessScheme::EdgeType};
  static const AccessScheme byPair[] = {AccessScheme::Compact,
                                        AccessScheme::EdgeType};
  if (format == Adjacency::Pairs)
    return byPair;
  return byDestination;
}

} // namespace

FailureOr<TraversalPlan> hector::gpu::planTraversal(TraversalOp op,
                                                    int64_t lanes) {
  if (op->getParentOfType<mlir::gpu::LaunchOp>() ||
      op->getParentOfType<mlir::gpu::GPUFuncOp>() ||
      op->getParentOfType<TraversalOp>())
    return op.emitOpError("must be in host code to become a GPU launch (it is "
                          "nested in a kernel or another traversal)");
  if (op.getDomain() == Domain::Nodes && !nodeCountSource(op))
    return op.emitOpError(
        "cannot tell the node count: a node traversal needs node_types or an "
        "operand accessed 'as node'");

  // What the body does to memory; anything the GPU cannot run is an error.
  Block &body = op.getBody().front();
  bool warpSafe = true;
  SmallVector<Access> accesses;
  WalkResult walk = body.walk([&](Operation *inner) {
    if (isa<GemmOp, TraversalOp>(inner)) {
      inner->emitOpError("cannot be nested in a traversal body on the GPU");
      return WalkResult::interrupt();
    }
    if (auto acc = dyn_cast<AccumulateOp>(inner)) {
      Type type = acc.getValue().getType();
      if (!isa<IntegerType, FloatType>(type)) {
        acc.emitOpError("cannot be lowered to an atomic update: element type ")
            << type << " is neither an integer nor a float";
        return WalkResult::interrupt();
      }
    }
    if (std::optional<Access> access = getAccess(inner)) {
      accesses.push_back(*access);
      if (auto rmw = dyn_cast<memref::AtomicRMWOp>(inner))
        warpSafe &= rmw.getResult().use_empty();
      return WalkResult::advance();
    }
    if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects) {
      inner->emitOpError("has unknown memory effects; a traversal body on "
                         "the GPU may only compute, load, store and "
                         "accumulate");
      return WalkResult::interrupt();
    }
    warpSafe &= effects.hasNoEffect();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  TraversalPlan plan;
  body.walk([&](scf::ForOp loop) {
    if (isDistributable(loop))
      plan.distributed.insert(loop);
  });

  // Buffers read and written, or stored to: each element must belong to one
  // lane. Either every access is a plain load/store inside one distributed
  // loop at one element that names the loop variable, or (write-only
  // buffers) all stores sit in warp-uniform code, issued by lane 0 in
  // program order. Atomic writes alone commute and need nothing.
  Canonical canon{op};
  DenseMap<Value, SmallVector<const Access *>> byRoot;
  for (const Access &access : accesses)
    byRoot[rootBuffer(access.memref)].push_back(&access);
  for (auto &[root, list] : byRoot) {
    bool reads = llvm::any_of(list, [](const Access *a) { return !a->writes; });
    bool stores = llvm::any_of(
        list, [](const Access *a) { return isa<memref::StoreOp>(a->op); });
    bool writes = llvm::any_of(list, [](const Access *a) { return a->writes; });
    if (!writes || (!reads && !stores))
      continue;
    const Access *first = list.front();
    scf::ForOp loop = enclosingDistributed(first->op, plan);
    bool uniformStores = !reads && llvm::all_of(list, [&](const Access *a) {
      return isa<memref::StoreOp>(a->op) && !enclosingDistributed(a->op, plan);
    });
    if (uniformStores)
      continue;
    if (!reads) {
      warpSafe &= planStoresFromLoops(list, plan, canon);
      continue;
    }
    bool safe = loop != nullptr;
    for (const Access *a : list) {
      if (!safe)
        break;
      safe = isa<memref::LoadOp, memref::StoreOp>(a->op) &&
             a->memref == first->memref &&
             enclosingDistributed(a->op, plan) == loop &&
             canon.sameIndices(a->indices, first->indices);
    }
    warpSafe &= safe && injectiveIn(first->indices, loop);
  }
  plan.mode = warpSafe && !plan.distributed.empty() ? TraversalMode::Warp
                                                    : TraversalMode::Thread;
  if (plan.mode == TraversalMode::Thread) {
    plan.distributed.clear();
    plan.syncAfterStores.clear();
  }
  else
    plan.lanes = lanes ? lanes : chooseLanes(plan);
  if (op.getDomain() != Domain::Edges)
    return plan;

  // Accumulations into the receiving row (one scheme for the whole
  // traversal: see receivingSchemes): gathered per warp (warp mode) or reduced across the warp
  // (thread mode). A destination qualifies when nothing else in the body
  // touches its buffer. Others (into the source node, say) stay atomics.
  DenseMap<Value, SmallVector<AccumulateOp>> accumulatesOf;
  SmallVector<Value> order;
  for (const Access &access : accesses)
    if (auto acc = dyn_cast<AccumulateOp>(access.op)) {
      if (!accumulatesOf.count(acc.getDest()))
        order.push_back(acc.getDest());
      accumulatesOf[acc.getDest()].push_back(acc);
    }
  int64_t groups = op.getLaunchBounds() / plan.lanes;
  int64_t bytesLeft = kMaxBufferBytesPerBlock;
  for (Value dest : order) {
    ArrayRef<AccumulateOp> accs = accumulatesOf[dest];
    const auto &rootAccesses = byRoot[rootBuffer(dest)];
    bool exclusive = llvm::all_of(rootAccesses, [&](const Access *a) {
      return isa<AccumulateOp>(a->op) && a->memref == dest;
    });
    Reduction kind = AccumulateOp(accs.front()).getKind();
    std::optional<AccessScheme> receiver;
    for (AccessScheme scheme : receivingSchemes(op.getAdjacencyFormat()))
      if (canon.isRow(AccumulateOp(accs.front()).getIndices().front(), scheme))
        receiver = scheme;
    bool chosen = !plan.buffered.empty() || !plan.reduced.empty();
    if (!receiver || (chosen && *receiver != plan.receiver))
      continue;
    bool intoReceiver = llvm::all_of(accs, [&](AccumulateOp acc) {
      return acc.getKind() == kind &&
             canon.isRow(acc.getIndices().front(), *receiver);
    });
    if (!exclusive || !intoReceiver)
      continue;
    Type element = cast<MemRefType>(dest.getType()).getElementType();
    if (plan.mode == TraversalMode::Warp) {
      std::optional<int64_t> size = staticRowSize(dest);
      if (!size || !isSharedAtomicType(element))
        continue;
      int64_t bytes = groupRowStride(*size, plan.lanes) * groups * (element.getIntOrFloatBitWidth() / 8);
      if (bytes > bytesLeft)
        continue;
      bytesLeft -= bytes;
      // Plain read-modify-writes when every site gives each element to one
      // lane: lane 0 in uniform code, or distinct iterations of one
      // distributed loop (all accumulations of that loop at one index).
      bool plain = true;
      for (AccumulateOp acc : accs) {
        scf::ForOp loop = enclosingDistributed(acc, plan);
        if (!loop)
          continue;
        plain &= injectiveIn(acc.getIndices().drop_front(), loop);
        for (AccumulateOp other : accs)
          if (enclosingDistributed(other, plan) == loop)
            plain &= canon.sameIndices(acc.getIndices(), other.getIndices());
      }
      plan.buffered.push_back({dest, kind, *size, plain});
      plan.receiver = *receiver;
      continue;
    }
    // Thread mode: only accumulations at the top level of the body, where
    // every lane passes, with every index but the row the same for all
    // instances, of types a shuffle moves.
    if (!(element.isF32() || element.isInteger(32)))
      continue;
    for (AccumulateOp acc : accs) {
      bool uniform = llvm::all_of(acc.getIndices().drop_front(),
                                  [&](Value v) { return isInvariant(v, op); });
      if (acc->getBlock() == &body && uniform) {
        plan.reduced.push_back(acc);
        plan.receiver = *receiver;
      }
    }
  }
  return plan;
}
