//===- OffloadScheduling.cpp - where saved values wait for the backward ---===//
//
// Offload scheduling (issue 17; G10's vitality analysis done by the
// compiler): a training step is `@f_fwd`'s operations followed by
// `@f_bwd`'s. A value the forward saves is idle from its last forward reader
// to its first backward reader; during that period it can leave device
// memory (host memory or disk, through the runtime's tensor cache) or be
// dropped and recomputed by the backward. The pass estimates every
// operation's time and every value's bytes, both symbolic in the graph's
// sizes and evaluated at the sizes it is given, builds the step's memory
// profile, and picks moves greedily by memory pressure removed per second
// of transfer. The plan is explicit in the IR: `hgraph.evict` in the
// forward, `!hgraph.stored` across the pair, `hgraph.prefetch` in the
// backward, or recomputing operations in the backward.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/IR/LoweringStorage.h"
#include "hector/Dialect/HGraph/Transforms/GraphSizes.h"
#include "hector/Dialect/HGraph/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace hector {
#define GEN_PASS_DEF_OFFLOADSCHEDULING
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using namespace hector::hgraph;
using namespace hector::hgraph::graph_sizes;

namespace {

constexpr StringLiteral kKind = "hgraph.kind";
constexpr StringLiteral kPrimal = "hgraph.primal";
constexpr StringLiteral kRole = "hgraph.role";
constexpr double kMiB = 1024.0 * 1024.0;
/// The longest chain of producers a recomputation may repeat.
constexpr unsigned kMaxRecomputedOps = 16;

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// The rates the times are estimated from (bytes per second, FLOP/s).
struct Rates {
  double device, gemm, hostWrite, hostRead, diskWrite, diskRead;
};

double elementBytes(Type type) {
  return std::max(1u, type.getIntOrFloatBitWidth() / 8);
}

/// Bytes of a node-wise or edge-wise value or a weight.
Count bytesOf(Value value) {
  if (auto feature = dyn_cast<FeatureType>(value.getType()))
    return Count::of(rowsOf(value), feature.getWidth() *
                                        elementBytes(feature.getElementType()));
  auto weight = cast<WeightType>(value.getType());
  double slice = elementBytes(weight.getElementType());
  for (int64_t dim : weight.getShape())
    slice *= static_cast<double>(dim);
  switch (weight.getIndex()) {
  case WeightIndex::EdgeType:
    return Count::of(R, slice);
  case WeightIndex::NodeType:
    return Count::of(T, slice);
  case WeightIndex::Single:
    return Count::of(std::nullopt, slice);
  }
  return Count::of(std::nullopt, slice);
}

/// Bytes of `rows` rows of a feature type.
Count rowsOfType(Symbol rows, FeatureType type) {
  return Count::of(rows, type.getWidth() * elementBytes(type.getElementType()));
}

bool hasCompactRows(Value value) {
  return isa<FeatureType>(value.getType()) && rowsOf(value) == P;
}

/// The op whose lowering emits `op`'s code: a weight gradient summed with
/// others is written by the sum.
Operation *loweredBy(Operation *op) {
  while (isWrittenIntoSum(op))
    op = *op->getUsers().begin();
  return op;
}

/// Multiply-adds of one row through a weight slice.
double sliceMacs(WeightType weight) {
  double macs = 1;
  for (int64_t dim : weight.getShape())
    macs *= static_cast<double>(dim);
  return macs;
}

/// An operation's estimated time: its minimum bytes over the device
/// bandwidth or its FLOPs over the GEMM peak, whichever is larger.
double timeOf(Operation *op, const Sizes &sizes, const Rates &rates) {
  Count bytes, flops;
  if (auto linear = dyn_cast<TypedLinearOp>(op)) {
    auto weight = cast<WeightType>(linear.getWeight().getType());
    Symbol rows = rowsOf(linear.getResult());
    flops = Count::of(rows, 2 * sliceMacs(weight));
    bytes = bytesOf(linear.getResult());
    bytes += Count::of(rows, weight.getInputWidth() * 4.0);
  } else if (auto grad = dyn_cast<WeightGradOp>(op)) {
    auto weight = cast<WeightType>(grad.getResult().getType());
    flops = Count::of(rowsOf(grad.getGrad()), 2 * sliceMacs(weight));
    bytes = bytesOf(grad.getInput());
    bytes += bytesOf(grad.getGrad());
  } else if (auto softmax = dyn_cast<EdgeSoftmaxOp>(op)) {
    for (int i = 0; i < 3; ++i)
      bytes += bytesOf(softmax.getResult());
  } else {
    // A traversal reads what is in memory (arguments, stored results) and
    // writes what it stores; row-wise values in between stay in registers.
    for (Value operand : op->getOperands())
      if (isa<FeatureType>(operand.getType()) &&
          (!operand.getDefiningOp() || isStoredByLowering(operand)))
        bytes += bytesOf(operand);
    for (Value result : op->getResults())
      if (isStoredByLowering(result))
        bytes += bytesOf(result);
  }
  return std::max(bytes.at(sizes) / rates.device, flops.at(sizes) / rates.gemm);
}

std::string mib(double bytes) {
  return llvm::formatv("{0:F1} MiB", bytes / kMiB).str();
}
std::string ms(double seconds) {
  return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
}

//===----------------------------------------------------------------------===//
// The step: the forward's operations, then the backward's
//===----------------------------------------------------------------------===//

enum class Decision { Keep, Host, Disk, Recompute };

StringRef decisionName(Decision decision) {
  switch (decision) {
  case Decision::Keep:
    return "keep";
  case Decision::Host:
    return "host";
  case Decision::Disk:
    return "disk";
  case Decision::Recompute:
    return "recompute";
  }
  return "keep";
}

/// One value the forward saves for the backward. Points index the step's
/// operations: the forward's are 0 .. F-1, the backward's F .. F+B-1.
struct Saved {
  unsigned resultIndex, argIndex;
  int64_t slot;
  Value value;
  BlockArgument arg;
  Operation *producer;
  unsigned def, lastForward, firstBackward, lastBackward;
  Count symbolicBytes;
  double bytes;
  double idleSeconds;
  double hostSeconds, diskSeconds;
  /// Operations of the forward that recompute the value from arguments the
  /// backward has, in order, and their time; none when it cannot be.
  SmallVector<Operation *> recomputeSlice;
  std::optional<double> recomputeSeconds;
  /// The other saved values (indices into the step's) the recomputation
  /// reads: they must be kept for it (a layer's messages from its kept
  /// input, say).
  SmallVector<unsigned> recomputeReads;
  Decision decision = Decision::Keep;
  unsigned prefetchAt = 0;
  /// A moved value's device memory stays allocated until its copy to the
  /// host is done: the point by which it is (simulateLinks).
  unsigned evictedBy = 0;
};

class Step {
public:
  Step(FuncOp forward, FuncOp backward, const Sizes &sizes, const Rates &rates)
      : forward(forward), backward(backward), sizes(sizes), rates(rates) {}

  /// Builds the timeline, the memory profile of everything but the saved
  /// values, and the saved-value records. Fails (with an error) when the
  /// pair does not match.
  LogicalResult analyze();

  void planForced(Decision tier, double minBytes);
  void planAuto(double capacity, double hostCapacity, bool report);
  void placePrefetches(double capacity);
  LogicalResult rewrite();
  void reportDecisions(double capacity);

private:
  std::vector<double> profile() const;
  void addInterval(std::vector<double> &memory, unsigned from, unsigned to,
                   double bytes) const;
  void addSaved(std::vector<double> &memory, const Saved &saved,
                Decision decision) const;
  void addPairSums(Value edgeValue, bool pairsPay);
  void findRecomputation(Saved &saved);
  double readSeconds(const Saved &saved) const;
  double simulateLinks(bool prefetchesPlaced);
  unsigned latestHidingPoint(const Saved &saved) const;
  bool readByRecomputation(const Saved &saved) const;
  double excessOver(double capacity, double *peak) const;
  double plannedPeak() const;
  unsigned pointAtTime(double seconds) const;
  double recomputeSeconds() const;
  unsigned pointOf(Operation *op) const { return points.lookup(op); }
  unsigned lastMemoryRead(Value value, Operation *ignored) const;
  unsigned firstReader(Value value) const;
  bool isEdgeValueInMemory(Value value) const;
  std::optional<Count> storedBytes(Value value, bool pairsPay) const;
  bool pairsPayAt(unsigned point) const {
    return point < numForward ? forwardPairsPay : backwardPairsPay;
  }
  double secondsBetween(unsigned from, unsigned to) const {
    return start[to] - start[from];
  }

  FuncOp forward, backward;
  const Sizes &sizes;
  const Rates &rates;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, unsigned> points;
  SmallVector<double> start; // ops.size() + 1 entries
  unsigned numForward = 0;
  bool forwardPairsPay = false, backwardPairsPay = false;
  /// The row-wise values the lowering stores where they are defined (its
  /// fusion plan, rowsStoredByFusion), in either function.
  llvm::DenseSet<Value> fusionStored;
  std::vector<double> base; // the step's memory without the saved values
  std::vector<Saved> saved;
};

/// Moves each pure operation of `func` to just before its first reader.
/// Autodiff emits the values the backward recomputes at its start; a saved
/// value they read would then be needed at once, with no idle period left
/// before its prefetch.
void sinkToFirstReader(FuncOp func) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (!isPure(op) || op->getNumRegions() || op->use_empty())
      continue;
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!first || top->isBeforeInBlock(first))
        first = top;
    }
    if (first && op->getNextNode() != first)
      op->moveBefore(first);
  }
}

/// Moves each operation of `func` that makes a weight (the gradients:
/// weight_grad, type_sum, weight_outer, their sums), with the row-wise math
/// it reads, up to just after the last stored value it needs. Autodiff
/// emits them after every input gradient, which keeps each layer's
/// per-edge gradients alive to the end of the backward.
void hoistWeightGradients(FuncOp func) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (!isPure(op) || op->getNumRegions() || op->getNumResults() == 0 ||
        !llvm::all_of(op->getResultTypes(),
                      [](Type type) { return isa<WeightType>(type); }))
      continue;
    // The row-wise operations it reads (evaluated inside its traversal) move
    // with it; the stored values and arguments they read stay.
    llvm::SetVector<Operation *> moving;
    Operation *after = nullptr;
    SmallVector<Operation *> work = {op};
    while (!work.empty()) {
      Operation *current = work.pop_back_val();
      for (Value operand : current->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def)
          continue;
        if (isPure(def) && !def->getNumRegions() &&
            !isStoredByLowering(operand) &&
            isa<FeatureType>(operand.getType())) {
          if (moving.insert(def))
            work.push_back(def);
        } else if (!after || after->isBeforeInBlock(def)) {
          after = def;
        }
      }
    }
    SmallVector<Operation *> order(moving.begin(), moving.end());
    llvm::sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    order.push_back(op);
    // Only upwards: an operation already before that point stays (other
    // readers may sit between it and there).
    for (Operation *moved : order) {
      if (after && (moved == after || moved->isBeforeInBlock(after)))
        continue;
      if (!after)
        moved->moveBefore(&body.front());
      else
        moved->moveAfter(after);
      after = moved;
    }
  }
}

LogicalResult Step::analyze() {
  sinkToFirstReader(backward);
  hoistWeightGradients(backward);
  for (FuncOp func : {forward, backward})
    for (Operation &op : func.getBody().front().without_terminator()) {
      points[&op] = ops.size();
      ops.push_back(&op);
    }
  numForward = forward.getBody().front().without_terminator().end() ==
                       forward.getBody().front().without_terminator().begin()
                   ? 0
                   : pointOf(&*std::prev(
                         forward.getBody().front().without_terminator().end())) +
                         1;
  forwardPairsPay = pairsPay(forward);
  backwardPairsPay = pairsPay(backward);
  for (FuncOp func : {forward, backward})
    for (Value value : rowsStoredByFusion(func))
      fusionStored.insert(value);
  start.assign(ops.size() + 1, 0);
  for (auto [index, op] : llvm::enumerate(ops))
    start[index + 1] = start[index] + timeOf(op, sizes, rates);

  // Saved results of the forward, paired with the backward's arguments by
  // name.
  auto forwardReturn =
      cast<ReturnOp>(forward.getBody().front().getTerminator());
  llvm::StringMap<unsigned> backwardArgs;
  for (unsigned i = 0; i < backward.getNumArguments(); ++i)
    if (auto role = backward.getArgAttrOfType<StringAttr>(i, kRole);
        role && role.getValue() == "saved")
      backwardArgs[backward.getArgumentName(i)] = i;
  int64_t slot = 0;
  llvm::DenseSet<Value> savedValues;
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    auto role = forward.getResultAttrOfType<StringAttr>(i, kRole);
    if (!role || role.getValue() != "saved")
      continue;
    auto name = forward.getResultAttrOfType<StringAttr>(i, "hgraph.name");
    auto it = name ? backwardArgs.find(name.getValue()) : backwardArgs.end();
    if (it == backwardArgs.end())
      return forward.emitError("hgraph-offload-scheduling: saved result #")
             << i << " has no argument of the same name in @"
             << backward.getSymName();
    Saved record;
    record.resultIndex = i;
    record.argIndex = it->second;
    record.slot = slot++;
    record.value = forwardReturn.getOperand(i);
    record.arg = backward.getArgument(it->second);
    record.producer = record.value.getDefiningOp();
    savedValues.insert(record.value);
    // Values the forward only passes through (an argument), or also returns
    // otherwise, or the backward never reads, stay where they are.
    if (!record.producer || record.arg.use_empty() ||
        !isa<FeatureType>(record.value.getType()) ||
        llvm::count(forwardReturn.getOperands(), record.value) != 1)
      continue;
    record.def = pointOf(record.producer);
    record.lastForward = lastMemoryRead(record.value, forwardReturn);
    record.firstBackward = ops.size();
    record.lastBackward = numForward;
    for (Operation *user : record.arg.getUsers()) {
      Operation *top = backward.getBody().front().findAncestorOpInBlock(*user);
      if (isa<ReturnOp>(top))
        continue;
      record.firstBackward = std::min(record.firstBackward, pointOf(top));
      record.lastBackward = std::max(record.lastBackward, pointOf(top));
    }
    if (record.firstBackward == ops.size())
      continue; // only returned by the backward
    record.symbolicBytes = bytesOf(record.value);
    record.bytes = record.symbolicBytes.at(sizes);
    record.idleSeconds =
        secondsBetween(record.lastForward + 1, record.firstBackward);
    record.hostSeconds =
        record.bytes / rates.hostWrite + record.bytes / rates.hostRead;
    record.diskSeconds =
        record.bytes / rates.diskWrite + record.bytes / rates.diskRead;
    record.prefetchAt = record.firstBackward;
    saved.push_back(std::move(record));
  }

  // Recomputations may start from other saved values, which then stay.
  for (Saved &record : saved)
    findRecomputation(record);

  // Everything else the lowering allocates: returned values are the
  // caller's buffers, for their whole function; a stored value lives from
  // its producer to its last reader; pair sums from their first reader to
  // their last; an edge_softmax's per-node scratch while it runs.
  base.assign(ops.size(), 0);
  for (FuncOp func : {forward, backward})
    for (BlockArgument arg : func.getArguments())
      if (isa<EdgeValueType>(arg.getType()))
        addPairSums(arg, func == forward ? forwardPairsPay : backwardPairsPay);
  for (auto [index, op] : llvm::enumerate(ops)) {
    bool inForward = index < numForward;
    bool paying = pairsPayAt(index);
    // A by_type softmax keeps no per-node scratch (TypeGroups.h).
    auto softmax = dyn_cast<EdgeSoftmaxOp>(op);
    if (softmax && !softmax.getByType()) {
      Count scratch = rowsOfType(N, softmaxNodeScratch(softmax));
      addInterval(base, index, index, 2 * scratch.at(sizes));
    }
    for (Value result : op->getResults()) {
      if (isa<EdgeValueType>(result.getType()))
        addPairSums(result, paying);
      if (savedValues.contains(result) ||
          !isa<FeatureType, WeightType>(result.getType()))
        continue;
      bool returned = llvm::any_of(result.getUsers(), [](Operation *user) {
        return isa<ReturnOp>(user);
      });
      if (returned) {
        if (inForward)
          addInterval(base, 0, numForward - 1, bytesOf(result).at(sizes));
        else
          addInterval(base, numForward, ops.size() - 1,
                      bytesOf(result).at(sizes));
        continue;
      }
      if (std::optional<Count> bytes = storedBytes(result, paying))
        addInterval(base, index, lastMemoryRead(result, nullptr),
                    bytes->at(sizes));
    }
  }
  // Saved values not planned (see above) are kept.
  for (Value value : savedValues)
    if (value.getDefiningOp() && llvm::none_of(saved, [&](const Saved &record) {
          return record.value == value;
        }))
      addInterval(base, 0, ops.size() - 1, bytesOf(value).at(sizes));
  return success();
}

/// True when the lowering has the edge value in memory before its readers
/// run: an argument, a value it stores, a score it shares.
bool Step::isEdgeValueInMemory(Value value) const {
  return !value.getDefiningOp() || isStoredByLowering(value) ||
         fusionStored.contains(value) ||
         isSharedScore(value,
                       [this](Value other) { return isEdgeValueInMemory(other); });
}

/// The bytes the lowering stores for a value that is not returned, beyond
/// the values it stores whatever reads them: a row-wise value its fusion
/// plan stores, one a GEMM or a gather reads in memory, a score several
/// readers share (LoweringStorage.h). No buffer for a weight written into a
/// sum's (a weight gradient, a first outer product).
std::optional<Count> Step::storedBytes(Value value, bool pairsPay) const {
  auto type = dyn_cast<FeatureType>(value.getType());
  if (!type) {
    Operation *def = value.getDefiningOp();
    auto outer = dyn_cast_or_null<WeightOuterOp>(def);
    return isStoredByLowering(value) && !isWrittenIntoSum(def) &&
                   !(outer && sumWrittenInPlace(outer))
               ? std::optional(bytesOf(value))
               : std::nullopt;
  }
  if (auto linear = value.getDefiningOp<TypedLinearOp>();
      linear && isStoredPerNode(linear))
    return rowsOfType(N, type);
  if (isStoredByLowering(value))
    return bytesOf(value);
  if (!value.getDefiningOp() || value.getDefiningOp<GatherOp>())
    return std::nullopt; // an argument; a gather reads its input's rows
  Symbol rows = type.isEdgeWise() ? E : N;
  if (fusionStored.contains(value) ||
      llvm::any_of(value.getUses(), [&](OpOperand &use) {
        return readsRowsInMemory(use, pairsPay);
      }))
    return rowsOfType(rows, type);
  if (isSharedScore(value,
                    [this](Value other) { return isEdgeValueInMemory(other); }))
    return rowsOfType(E, type);
  return std::nullopt;
}

/// Counts the per-pair sums of `edgeValue` (LoweringStorage.h), P rows, from
/// the first op that reads them to the last.
void Step::addPairSums(Value edgeValue, bool pairsPay) {
  SmallVector<Operation *, 2> readers =
      pairSumReaders(edgeValue, pairsPay, hasCompactRows);
  if (readers.empty())
    return;
  unsigned first = ops.size(), last = 0;
  for (Operation *reader : readers) {
    unsigned point = pointOf(loweredBy(reader));
    first = std::min(first, point);
    last = std::max(last, point);
  }
  auto type = cast<FeatureType>(edgeValue.getType());
  addInterval(base, first, last, rowsOfType(P, type).at(sizes));
}

/// The last point that reads `value`'s memory: row-wise readers are
/// evaluated inside the traversals of their own readers, so their readers
/// count, unless the lowering stores the reader (then its first reader
/// does); readers of per-pair sums count once, where the sums are computed
/// (a row-wise value returned is stored at the return, the end of its
/// function). `ignored` (the forward's return, for a saved value) does not
/// count.
unsigned Step::lastMemoryRead(Value value, Operation *ignored) const {
  Operation *producer = value.getDefiningOp();
  unsigned last = producer ? pointOf(producer) : 0;
  bool paying = pairsPayAt(last);
  // Per-pair sums read the rows once, where their first reader computes
  // them.
  SmallVector<Operation *, 2> pairReaders;
  if (isa<EdgeValueType>(value.getType()))
    pairReaders = pairSumReaders(value, paying, hasCompactRows);
  if (!pairReaders.empty()) {
    unsigned first = ops.size();
    for (Operation *reader : pairReaders)
      first = std::min(first, pointOf(loweredBy(reader)));
    last = std::max(last, first);
  }
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (user == ignored ||
        (!pairReaders.empty() &&
         readsPairSumsOnly(use, paying, hasCompactRows)))
      continue;
    if (isa<ReturnOp>(user)) {
      last = std::max(last, pointOf(user->getBlock()->getParentOp() == forward
                                         ? ops[numForward - 1]
                                         : ops.back()));
      continue;
    }
    last = std::max(last, pointOf(loweredBy(user)));
    if (isa<EvictOp>(user))
      continue;
    // A row-wise reader is evaluated where its own readers run, unless the
    // lowering stores it: then it reads `value` once, where its fusion plan
    // stores it (its definition, counted above) or for its first reader.
    for (Value result : user->getResults()) {
      if (isStoredByLowering(result) || isa<WeightType>(result.getType()) ||
          fusionStored.contains(result))
        continue;
      if (storedBytes(result, pairsPayAt(pointOf(user))))
        last = std::max(last, firstReader(result));
      else
        last = std::max(last, lastMemoryRead(result, nullptr));
    }
  }
  return last;
}

/// The first point that reads `value` (its function's last when only the
/// return does).
unsigned Step::firstReader(Value value) const {
  Operation *producer = value.getDefiningOp();
  unsigned def = pointOf(producer);
  unsigned first = def < numForward ? numForward - 1 : ops.size() - 1;
  for (Operation *user : value.getUsers())
    if (!isa<ReturnOp>(user))
      first = std::min(first, pointOf(user));
  return std::max(first, def);
}

void Step::addInterval(std::vector<double> &memory, unsigned from, unsigned to,
                       double bytes) const {
  for (unsigned point = from; point <= to && point < memory.size(); ++point)
    memory[point] += bytes;
}

/// A kept value is the caller's buffer for the whole step (the forward's
/// result, the backward's argument); a moved or recomputed one is the
/// lowering's, freed after its last reader in either function.
void Step::addSaved(std::vector<double> &memory, const Saved &record,
                    Decision decision) const {
  switch (decision) {
  case Decision::Keep:
    addInterval(memory, 0, ops.size() - 1, record.bytes);
    return;
  case Decision::Host:
  case Decision::Disk:
    addInterval(memory, record.def,
                std::max(record.lastForward, record.evictedBy), record.bytes);
    addInterval(memory, record.prefetchAt, record.lastBackward, record.bytes);
    return;
  case Decision::Recompute:
    addInterval(memory, record.def, record.lastForward, record.bytes);
    addInterval(memory, record.firstBackward, record.lastBackward,
                record.bytes);
    return;
  }
}

std::vector<double> Step::profile() const {
  std::vector<double> memory = base;
  for (const Saved &record : saved)
    addSaved(memory, record, record.decision);
  return memory;
}

double Step::readSeconds(const Saved &record) const {
  return record.bytes / (record.decision == Decision::Disk ? rates.diskRead
                                                           : rates.hostRead);
}

/// The first point that starts at or after `seconds` (the last one if none).
unsigned Step::pointAtTime(double seconds) const {
  auto it = std::lower_bound(start.begin(), start.end() - 1, seconds);
  return std::min<unsigned>(it - start.begin(), ops.size() - 1);
}

/// The copies of the moved values share one link each way, so they queue:
/// evictions to host memory in the order the forward issues them, at the
/// host write rate, each holding its device memory until it is done
/// (`evictedBy`); prefetches in the order the backward reads them, at the
/// host (or disk) read rate, none before the backward starts (or before its
/// placed point) nor before its eviction is done. A prefetch not done by its
/// first reader stalls the step, and the stall delays what follows. Returns
/// the total stall. Each copy alone would be hidden in its value's idle
/// period; together they may not be (issue 17, measured on an H200).
double Step::simulateLinks(bool prefetchesPlaced) {
  SmallVector<Saved *> moved;
  for (Saved &record : saved)
    if (record.decision == Decision::Host || record.decision == Decision::Disk)
      moved.push_back(&record);
  llvm::stable_sort(moved, [](const Saved *a, const Saved *b) {
    return a->lastForward < b->lastForward;
  });
  DenseMap<const Saved *, double> evictionDone;
  double linkFree = 0;
  for (Saved *record : moved) {
    double begin = std::max(start[record->lastForward + 1], linkFree);
    linkFree = begin + record->bytes / rates.hostWrite;
    evictionDone[record] = linkFree;
    record->evictedBy = pointAtTime(linkFree);
  }
  llvm::stable_sort(moved, [](const Saved *a, const Saved *b) {
    return a->firstBackward < b->firstBackward;
  });
  double stall = 0;
  linkFree = 0;
  for (Saved *record : moved) {
    unsigned issue =
        prefetchesPlaced ? record->prefetchAt : latestHidingPoint(*record);
    double begin = std::max(
        {start[issue] + stall, linkFree, evictionDone.lookup(record)});
    linkFree = begin + readSeconds(*record);
    double deadline = start[record->firstBackward] + stall;
    if (linkFree > deadline)
      stall += linkFree - deadline;
  }
  return stall;
}

/// True when a recomputation planned reads the value (which must then stay).
bool Step::readByRecomputation(const Saved &record) const {
  unsigned index = &record - saved.data();
  return llvm::any_of(saved, [&](const Saved &other) {
    return other.decision == Decision::Recompute &&
           llvm::is_contained(other.recomputeReads, index);
  });
}

/// The latest point of the backward from which the value's read alone is
/// done by its first reader (the backward's start if none is).
unsigned Step::latestHidingPoint(const Saved &record) const {
  for (unsigned point = record.firstBackward + 1; point-- > numForward;)
    if (secondsBetween(point, record.firstBackward) >= readSeconds(record))
      return point;
  return numForward;
}

/// The memory over `capacity`, in byte-seconds over the step's operations,
/// of the plan as it stands; `peak` gets its peak.
double Step::excessOver(double capacity, double *peak) const {
  std::vector<double> memory = profile();
  double excess = 0;
  for (unsigned point = 0; point < memory.size(); ++point)
    if (memory[point] > capacity)
      excess += (memory[point] - capacity) *
                std::max(secondsBetween(point, point + 1), 1e-9);
  *peak = memory.empty() ? 0 : *llvm::max_element(memory);
  return excess;
}

/// The peak of the plan as it stands.
double Step::plannedPeak() const {
  std::vector<double> memory = profile();
  return memory.empty() ? 0 : *llvm::max_element(memory);
}

/// The time the backward spends recomputing the values planned so.
double Step::recomputeSeconds() const {
  double seconds = 0;
  for (const Saved &record : saved)
    if (record.decision == Decision::Recompute && record.recomputeSeconds)
      seconds += *record.recomputeSeconds;
  return seconds;
}

/// The producers of a saved value back to the forward's arguments or to
/// other saved values, if each argument they read is one the backward has
/// too (by name), and the chain is short and free of side effects.
void Step::findRecomputation(Saved &record) {
  llvm::SetVector<Operation *> slice;
  llvm::SetVector<unsigned> reads;
  SmallVector<Operation *> work = {record.producer};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!slice.insert(op))
      continue;
    if (slice.size() > kMaxRecomputedOps || !isPure(op))
      return;
    for (Value operand : op->getOperands()) {
      auto other = llvm::find_if(saved, [&](const Saved &candidate) {
        return candidate.value == operand && &candidate != &record;
      });
      if (other != saved.end()) {
        reads.insert(other - saved.begin());
        continue;
      }
      if (Operation *def = operand.getDefiningOp()) {
        work.push_back(def);
        continue;
      }
      auto arg = cast<BlockArgument>(operand);
      if (isa<hgraph::GraphType>(arg.getType()))
        continue;
      std::string name = forward.getArgumentName(arg.getArgNumber());
      bool found = false;
      for (unsigned i = 0; i < backward.getNumArguments() && !found; ++i) {
        auto role = backward.getArgAttrOfType<StringAttr>(i, kRole);
        found = backward.getArgumentName(i) == name &&
                (!role || role.getValue() == "input" ||
                 role.getValue() == "weight");
      }
      if (!found)
        return;
    }
  }
  record.recomputeSlice.assign(slice.begin(), slice.end());
  record.recomputeReads.assign(reads.begin(), reads.end());
  llvm::sort(record.recomputeSlice, [&](Operation *a, Operation *b) {
    return pointOf(a) < pointOf(b);
  });
  double seconds = 0;
  for (Operation *op : record.recomputeSlice)
    seconds += timeOf(op, sizes, rates);
  record.recomputeSeconds = seconds;
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

void Step::planForced(Decision tier, double minBytes) {
  for (Saved &record : saved)
    if (record.bytes >= minBytes && record.lastForward + 1 < record.firstBackward)
      record.decision = tier;
  simulateLinks(/*prefetchesPlaced=*/false); // when each eviction is done
}

void Step::planAuto(double capacity, double hostCapacity, bool report) {
  double hostUsed = 0;
  auto hostFits = [&](const Saved &record) {
    return hostCapacity <= 0 || hostUsed + record.bytes <= hostCapacity;
  };
  if (capacity <= 0) {
    // No pressure: move only what costs no time, the round trip hidden in
    // the idle period behind the copies already planned.
    for (Saved &record : saved) {
      if (record.lastForward + 1 >= record.firstBackward)
        continue;
      double stall = simulateLinks(false);
      double peak = plannedPeak();
      auto costsNothing = [&](Decision decision) {
        record.decision = decision;
        bool hidden = simulateLinks(false) <= stall;
        bool lower = plannedPeak() <= peak;
        record.decision = Decision::Keep;
        return hidden && lower;
      };
      if (record.hostSeconds <= record.idleSeconds && hostFits(record) &&
          costsNothing(Decision::Host)) {
        record.decision = Decision::Host;
        hostUsed += record.bytes;
      } else if (record.diskSeconds <= record.idleSeconds &&
                 costsNothing(Decision::Disk)) {
        record.decision = Decision::Disk;
      }
    }
    simulateLinks(false);
    return;
  }
  // Each candidate is judged by the plan it would give: the memory over the
  // capacity it removes (its copies queued behind the others, which may then
  // hold their memory longer) per second it adds (the stall, or the
  // recomputation).
  while (true) {
    double stall = simulateLinks(false);
    double peak = 0;
    double excess = excessOver(capacity, &peak);
    if (peak <= capacity)
      return;
    Saved *best = nullptr;
    Decision bestDecision = Decision::Keep;
    double bestScore = 0;
    for (Saved &record : saved) {
      // A value a planned recomputation reads stays.
      if (record.decision != Decision::Keep || readByRecomputation(record))
        continue;
      SmallVector<Decision, 2> options;
      if (record.lastForward + 1 < record.firstBackward)
        options.push_back(hostFits(record) ? Decision::Host : Decision::Disk);
      if (record.recomputeSeconds &&
          llvm::all_of(record.recomputeReads, [&](unsigned index) {
            return saved[index].decision == Decision::Keep;
          }))
        options.push_back(Decision::Recompute);
      for (Decision option : options) {
        record.decision = option;
        double optionStall = simulateLinks(false);
        double optionPeak = 0;
        double gain = excess - excessOver(capacity, &optionPeak);
        record.decision = Decision::Keep;
        if (gain <= 0)
          continue;
        // A move costs the stall it adds and a small share of its own
        // transfer time, so that of two free moves the cheaper goes first.
        double cost =
            option == Decision::Recompute
                ? *record.recomputeSeconds
                : std::max(optionStall - stall, 0.0) +
                      0.01 * (option == Decision::Host ? record.hostSeconds
                                                       : record.diskSeconds);
        double score = gain / std::max(cost, 1e-12);
        if (score > bestScore) {
          best = &record;
          bestDecision = option;
          bestScore = score;
        }
      }
    }
    simulateLinks(false);
    if (!best) {
      forward.emitWarning() << "hgraph-offload-scheduling: the step needs "
                            << mib(peak)
                            << " with every idle saved value moved; the "
                               "capacity is "
                            << mib(capacity);
      return;
    }
    best->decision = bestDecision;
    if (bestDecision == Decision::Host)
      hostUsed += best->bytes;
  }
}

void Step::placePrefetches(double capacity) {
  SmallVector<Saved *> moved;
  for (Saved &record : saved)
    if (record.decision == Decision::Host || record.decision == Decision::Disk)
      moved.push_back(&record);
  llvm::sort(moved, [](const Saved *a, const Saved *b) {
    return a->firstBackward < b->firstBackward;
  });
  // Not yet placed values count from their first reader on.
  std::vector<double> memory = profile();
  for (Saved *record : moved) {
    unsigned first = record->firstBackward;
    std::optional<unsigned> placed;
    if (capacity > 0) {
      // The earliest point from which the value fits until its reader.
      for (unsigned point = first; point-- > numForward;) {
        if (memory[point] + record->bytes > capacity)
          break;
        placed = point;
      }
    }
    if (!placed) // the latest point that still hides the read
      placed = latestHidingPoint(*record);
    addInterval(memory, *placed, first - 1, record->bytes);
    record->prefetchAt = *placed;
  }
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// Sets a function's type from its block arguments and returned values.
void refreshType(FuncOp func) {
  auto ret = cast<ReturnOp>(func.getBody().front().getTerminator());
  func.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(
      func.getContext(), func.getBody().front().getArgumentTypes(),
      ret.getOperandTypes())));
}

LogicalResult Step::rewrite() {
  OpBuilder builder(forward.getContext());
  auto forwardReturn =
      cast<ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<unsigned> droppedResults, droppedArgs;
  for (Saved &record : saved) {
    switch (record.decision) {
    case Decision::Keep:
      break;
    case Decision::Host:
    case Decision::Disk: {
      Operation *lastReader = ops[record.lastForward];
      builder.setInsertionPointAfter(lastReader);
      auto storedType = StoredType::get(
          builder.getContext(), cast<FeatureType>(record.value.getType()));
      Value stored = EvictOp::create(
          builder, record.value.getLoc(), storedType, record.value,
          record.decision == Decision::Host ? OffloadTier::Host
                                            : OffloadTier::Disk,
          record.slot);
      forwardReturn.setOperand(record.resultIndex, stored);

      Operation *at = record.prefetchAt < ops.size()
                          ? ops[record.prefetchAt]
                          : backward.getBody().front().getTerminator();
      builder.setInsertionPoint(at);
      Type valueType = record.arg.getType();
      record.arg.setType(storedType);
      auto prefetch = PrefetchOp::create(builder, record.arg.getLoc(),
                                         valueType, record.arg, record.slot);
      record.arg.replaceAllUsesExcept(prefetch.getResult(), prefetch);
      break;
    }
    case Decision::Recompute: {
      builder.setInsertionPoint(ops[record.firstBackward]);
      IRMapping mapping;
      mapping.map(forward.getGraph(), backward.getGraph());
      for (unsigned i = 0; i < forward.getNumArguments(); ++i)
        for (unsigned j = 0; j < backward.getNumArguments(); ++j)
          if (forward.getArgumentName(i) == backward.getArgumentName(j) &&
              backward.getArgument(j) != record.arg)
            mapping.map(forward.getArgument(i), backward.getArgument(j));
      for (unsigned index : record.recomputeReads) // kept for this
        mapping.map(saved[index].value, saved[index].arg);
      for (Operation *op : record.recomputeSlice)
        builder.clone(*op, mapping);
      record.arg.replaceAllUsesWith(mapping.lookup(record.value));
      droppedResults.push_back(record.resultIndex);
      droppedArgs.push_back(record.argIndex);
      break;
    }
    }
  }
  // Values no longer saved leave both signatures.
  llvm::sort(droppedResults, std::greater<>());
  for (unsigned index : droppedResults) {
    forwardReturn->eraseOperand(index);
    if (failed(forward.eraseResult(index)))
      return forward.emitError("hgraph-offload-scheduling: cannot drop result #")
             << index;
  }
  llvm::sort(droppedArgs, std::greater<>());
  for (unsigned index : droppedArgs)
    if (failed(backward.eraseArgument(index)))
      return backward.emitError(
                 "hgraph-offload-scheduling: cannot drop argument #")
             << index;
  refreshType(forward);
  refreshType(backward);
  // The forward may no longer need what only a dropped value read.
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(forward.getBody().front().without_terminator())))
      if (op.use_empty() && isPure(&op)) {
        op.erase();
        erased = true;
      }
  }
  return success();
}

void Step::reportDecisions(double capacity) {
  std::vector<double> before = base;
  for (const Saved &record : saved)
    addSaved(before, record, Decision::Keep);
  std::vector<double> after = profile();
  for (const Saved &record : saved) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "saved value '"
       << forward.getResultAttrOfType<StringAttr>(record.resultIndex,
                                                  "hgraph.name")
              .getValue()
       << "' (slot " << record.slot << "): ";
    record.symbolicBytes.print(os);
    os << " bytes = " << mib(record.bytes) << "; produced at #" << record.def
       << ", last forward reader #" << record.lastForward
       << ", backward readers #" << record.firstBackward << "..#"
       << record.lastBackward << " (of " << ops.size() << "; the backward "
       << "starts at #" << numForward << "); idle " << ms(record.idleSeconds)
       << "; round trip host " << ms(record.hostSeconds) << ", disk "
       << ms(record.diskSeconds) << ", recompute "
       << (record.recomputeSeconds ? ms(*record.recomputeSeconds)
                                   : std::string("impossible"))
       << ": " << decisionName(record.decision);
    if (record.decision == Decision::Host || record.decision == Decision::Disk)
      os << ", prefetched at #" << record.prefetchAt;
    record.producer->emitRemark(text);
  }
  double recomputing = recomputeSeconds();
  double waiting = simulateLinks(/*prefetchesPlaced=*/true);
  forward.emitRemark() << "offload plan for @" << forward.getSymName()
                       << " and @" << backward.getSymName()
                       << ": step peak "
                       << mib(before.empty() ? 0 : *llvm::max_element(before))
                       << " kept, "
                       << mib(after.empty() ? 0 : *llvm::max_element(after))
                       << " planned; capacity "
                       << (capacity > 0 ? mib(capacity) : std::string("none"))
                       << "; estimated step time "
                       << ms(start.back() + recomputing + waiting)
                       << " (operations " << ms(start.back())
                       << ", recomputing " << ms(recomputing)
                       << ", waiting for prefetches " << ms(waiting) << ")";
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct OffloadSchedulingPass
    : public hector::impl::OffloadSchedulingBase<OffloadSchedulingPass> {
  using OffloadSchedulingBase::OffloadSchedulingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "none" && mode != "host" && mode != "disk" && mode != "auto") {
      module.emitError("hgraph-offload-scheduling: mode must be none, host, "
                       "disk or auto; got '")
          << mode << "'";
      return signalPassFailure();
    }
    if (capacityMiB < 0 || hostCapacityMiB < 0 || minKiB < 0) {
      module.emitError("hgraph-offload-scheduling: capacities and min-kib "
                       "must be non-negative");
      return signalPassFailure();
    }
    // The rates come from the command line (the pass's or a pipeline's
    // options): a zero, negative, infinite or NaN one would make every time
    // estimate, and so the plan, meaningless.
    const std::pair<StringRef, double> namedRates[] = {
        {"device-gbps", deviceGBps},         {"gemm-tflops", gemmTFlops},
        {"host-write-gbps", hostWriteGBps},  {"host-read-gbps", hostReadGBps},
        {"disk-write-gbps", diskWriteGBps}, {"disk-read-gbps", diskReadGBps}};
    for (auto [name, rate] : namedRates)
      if (!(rate > 0) || !std::isfinite(rate)) {
        std::string shown;
        llvm::raw_string_ostream(shown) << llvm::format("%g", rate);
        module.emitError("hgraph-offload-scheduling: ")
            << name << " must be a positive, finite number; got " << shown;
        return signalPassFailure();
      }
    Rates rates{deviceGBps * 1e9,    gemmTFlops * 1e12,  hostWriteGBps * 1e9,
                hostReadGBps * 1e9,  diskWriteGBps * 1e9, diskReadGBps * 1e9};
    std::optional<Sizes> sizes =
        resolve(module, "hgraph-offload-scheduling", numNodes, numEdges,
                numPairs, numEdgeTypes, numNodeTypes);
    if (!sizes)
      return signalPassFailure();
    if (mode == "none" && !report)
      return;

    double capacity = static_cast<double>(capacityMiB) * kMiB;
    for (FuncOp forward : module.getOps<FuncOp>()) {
      auto kind = forward->getAttrOfType<StringAttr>(kKind);
      if (!kind || kind.getValue() != "training_forward")
        continue;
      FuncOp backward = findBackward(module, forward);
      if (!backward)
        continue;
      Step step(forward, backward, *sizes, rates);
      if (failed(step.analyze()))
        return signalPassFailure();
      if (mode == "host" || mode == "disk")
        step.planForced(mode == "host" ? Decision::Host : Decision::Disk,
                        static_cast<double>(minKiB) * 1024);
      else if (mode == "auto")
        step.planAuto(capacity, static_cast<double>(hostCapacityMiB) * kMiB,
                      report);
      step.placePrefetches(capacity);
      if (report)
        step.reportDecisions(capacity);
      if (failed(step.rewrite()))
        return signalPassFailure();
    }
  }

  /// The backward function of the same primal as `forward`.
  static FuncOp findBackward(ModuleOp module, FuncOp forward) {
    auto primal = forward->getAttrOfType<StringAttr>(kPrimal);
    for (FuncOp func : module.getOps<FuncOp>()) {
      auto kind = func->getAttrOfType<StringAttr>(kKind);
      if (kind && kind.getValue() == "training_backward" &&
          func->getAttrOfType<StringAttr>(kPrimal) == primal)
        return func;
    }
    return nullptr;
  }
};

} // namespace
