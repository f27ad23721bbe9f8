//===- WarpBody.cpp - warp-level rewriting of traversal bodies --*- C++ -*-===//
//
// The lane-level pieces of the traversal kernels: splitting a loop over the
// lanes of a group, butterfly all-reductions, first-lane side effects, the
// lowering of htmpl.accumulate to shared or global atomics, and the
// segmented warp reduction of the thread mapping.
//
//===----------------------------------------------------------------------===//

#include "Traversal.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace hector;
using namespace hector::gpu;
using namespace hector::htmpl;

Value hector::gpu::combine(OpBuilder &b, Location loc, Reduction kind, Value x,
                           Value y) {
  bool isFloat = isa<FloatType>(x.getType());
  if (kind == Reduction::Add)
    return isFloat ? Value(arith::AddFOp::create(b, loc, x, y))
                   : Value(arith::AddIOp::create(b, loc, x, y));
  return isFloat ? Value(arith::MaximumFOp::create(b, loc, x, y))
                 : Value(arith::MaxSIOp::create(b, loc, x, y));
}

Value hector::gpu::identityOf(OpBuilder &b, Location loc, Reduction kind,
                              Type type) {
  if (kind == Reduction::Add)
    return zeroOf(b, loc, type);
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(type, APFloat::getInf(floatType.getFloatSemantics(),
                                             /*Negative=*/true)));
  unsigned width = type.getIntOrFloatBitWidth();
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, APInt::getSignedMinValue(width)));
}

arith::AtomicRMWKind hector::gpu::atomicKind(Reduction kind, Type type) {
  bool isFloat = isa<FloatType>(type);
  if (kind == Reduction::Add)
    return isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
  return isFloat ? arith::AtomicRMWKind::maximumf : arith::AtomicRMWKind::maxs;
}

void hector::gpu::emitAtomic(OpBuilder &b, Location loc,
                             arith::AtomicRMWKind kind, Value value,
                             Value memref, ValueRange indices) {
  auto type = cast<MemRefType>(memref.getType());
  if (kind != arith::AtomicRMWKind::maximumf ||
      !type.getLayout().isIdentity()) {
    memref::AtomicRMWOp::create(b, loc, kind, value, memref, indices);
    return;
  }
  // Address of the element: aligned base + row-major offset (an identity
  // layout has offset 0 and unit innermost stride).
  Value offset = constIndex(b, loc, 0);
  for (auto [d, index] : llvm::enumerate(indices)) {
    offset =
        b.createOrFold<arith::MulIOp>(loc, offset, dimOf(b, loc, memref, d));
    offset = b.createOrFold<arith::AddIOp>(loc, offset, index);
  }
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  Value address = arith::AddIOp::create(
      b, loc, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref),
      arith::MulIOp::create(b, loc, offset, constIndex(b, loc, bytes)));
  bool shared = mlir::gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type);
  auto pointerType = LLVM::LLVMPointerType::get(b.getContext(), shared ? 3 : 0);
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, pointerType,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), address),
      LLVM::DereferenceableAttr());
  LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::fmaximum, pointer, value,
                            LLVM::AtomicOrdering::monotonic,
                            shared ? "block" : "device");
}

void hector::gpu::emitWarpSync(OpBuilder &b, Location loc, Value mask) {
  NVVM::SyncWarpOp::create(b, loc, mask ? mask : constI32(b, loc, -1));
}

namespace {
/// The neutral element of a reduction matched by matchReduction.
Value combinerIdentity(OpBuilder &b, Location loc, Operation *combiner) {
  Type type = combiner->getResult(0).getType();
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    APFloat value = APFloat::getZero(sem);
    if (isa<arith::MulFOp>(combiner))
      value = APFloat::getOne(sem);
    else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
      value = APFloat::getInf(sem, /*Negative=*/true);
    else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
      value = APFloat::getInf(sem, /*Negative=*/false);
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  }
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value = APInt::getZero(width);
  if (isa<arith::MulIOp>(combiner))
    value = APInt(width, 1);
  else if (isa<arith::MaxSIOp>(combiner))
    value = APInt::getSignedMinValue(width);
  else if (isa<arith::MinSIOp>(combiner))
    value = APInt::getSignedMaxValue(width);
  else if (isa<arith::MinUIOp, arith::AndIOp>(combiner))
    value = APInt::getAllOnes(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

/// A copy of the binary `combiner` (attributes such as fastmath included)
/// applied to x and y.
Value cloneCombiner(OpBuilder &b, Operation *combiner, Value x, Value y) {
  IRMapping mapping;
  mapping.map(combiner->getOperand(0), x);
  mapping.map(combiner->getOperand(1), y);
  return b.clone(*combiner, mapping)->getResult(0);
}

/// Butterfly all-reduction over the lanes of a group (context.lanes lanes,
/// aligned in the warp, named by context.mask): every lane of the group ends
/// with the combination of its lanes' values. `shfl.sync` is emitted with
/// the group's own member mask and segment, so groups of one warp may
/// diverge (gpu.shuffle of a width below 32 names lanes [0, width) only).
Value groupAllReduce(OpBuilder &b, Location loc, Value value,
                     const WarpContext &context,
                     function_ref<Value(Value, Value)> combineFn) {
  // Segment mask in bits 8-12 (lanes outside the group are not read), the
  // largest lane in bits 0-4.
  Value segment = constI32(b, loc, ((kWarpSize - context.lanes) << 8) | 0x1f);
  for (int64_t offset = context.lanes / 2; offset > 0; offset /= 2) {
    Value other = NVVM::ShflOp::create(
        b, loc, value.getType(), context.mask, value,
        constI32(b, loc, offset), segment, NVVM::ShflKind::bfly,
        /*return_value_and_is_valid=*/nullptr);
    value = combineFn(value, other);
  }
  return value;
}

/// Loops whose lanes each run at most this many iterations (known
/// statically) are unrolled after the split: no loop counter, compare and
/// branch per feature, and the loads of all iterations issued together.
constexpr uint64_t kMaxUnrolledPerLane = 8;
/// Loops of unknown length (a node's CSR row, walked by its lanes) are
/// unrolled by this factor after the split: the loads of that many
/// iterations issue before the first result is needed, where the rolled
/// loop waits for each iteration's index and row before the next one's.
constexpr uint64_t kDynamicUnroll = 4;

} // namespace

bool hector::gpu::runsVectorRows(scf::ForOp loop, int64_t lanes) {
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->getZExtValue() % (lanes * kRowVector) != 0)
    return false;
  return trips->getZExtValue() / lanes <= kMaxUnrolledPerLane;
}

namespace {
/// Splits the iterations of `loop` over the lanes of the group (lane l runs
/// iterations l, l + lanes, ...; a loop of context.vectorLoops runs of
/// v = kRowVector: lv .. lv + v - 1, then lanes * v further on) and finishes
/// its reductions in the group.
/// Returns whether the caller should unroll the loop (fully) once done
/// with it.
bool distributeLoop(RewriterBase &rewriter, scf::ForOp loop,
                    const WarpContext &context) {
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  Value step = loop.getStep(), lowerBound = loop.getLowerBound();
  Value lower = arith::AddIOp::create(
      rewriter, loc, loop.getLowerBound(),
      arith::MulIOp::create(rewriter, loc, context.lane, step));
  Value stride = arith::MulIOp::create(
      rewriter, loc, step, constIndex(rewriter, loc, context.lanes));
  SmallVector<Operation *> combiners;
  SmallVector<Value> inits;
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
    combiners.push_back(matchReduction(loop, i));
    inits.push_back(loop.getInitArgs()[i]);
  }
  // Every lane runs the same number of iterations when the group divides
  // the trip count: the loop then counts them (0 .. trips / lanes), with
  // the iteration recomputed in the body, so that it can be unrolled.
  std::optional<APInt> trips = loop.getStaticTripCount();
  int64_t v = context.vectorLoops.contains(loop) ? kRowVector : 1;
  uint64_t perLane = 0;
  if (trips && trips->getZExtValue() % context.lanes == 0)
    perLane = trips->getZExtValue() / context.lanes;
  rewriter.modifyOpInPlace(loop, [&]() {
    if (perLane) {
      loop.setLowerBound(constIndex(rewriter, loc, 0));
      loop.setUpperBound(constIndex(rewriter, loc, perLane));
      loop.setStep(constIndex(rewriter, loc, 1));
    } else {
      loop.setLowerBound(lower);
      loop.setStep(stride);
    }
    for (auto [i, combiner] : llvm::enumerate(combiners))
      loop.getInitArgsMutable()[i].assign(
          combinerIdentity(rewriter, loc, combiner));
  });
  if (perLane && v == 1) {
    // iteration = lower + k * stride
    Value k = loop.getInductionVar();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    auto offset = arith::MulIOp::create(rewriter, loc, k, stride);
    Value iteration = arith::AddIOp::create(rewriter, loc, lower, offset);
    rewriter.replaceAllUsesExcept(k, iteration, offset);
  } else if (perLane) {
    // iteration = start + step * ((k mod v) + (k div v) * lanes * v), with
    // start = lowerBound + step * lane * v: each lane's runs of v
    // consecutive features sit in one 16-byte chunk (once unrolled, k is a
    // constant and the mod and div fold).
    Value k = loop.getInductionVar();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    Value cv = constIndex(rewriter, loc, v);
    auto within = arith::RemUIOp::create(rewriter, loc, k, cv);
    auto run = arith::DivUIOp::create(rewriter, loc, k, cv);
    Value local = arith::AddIOp::create(
        rewriter, loc, within,
        arith::MulIOp::create(rewriter, loc, run,
                              constIndex(rewriter, loc, context.lanes * v)));
    Value first = arith::AddIOp::create(
        rewriter, loc, lowerBound,
        arith::MulIOp::create(
            rewriter, loc, step,
            arith::MulIOp::create(rewriter, loc, context.lane, cv)));
    Value iteration = arith::AddIOp::create(
        rewriter, loc, first, arith::MulIOp::create(rewriter, loc, step, local));
    rewriter.replaceUsesWithIf(k, iteration, [&](OpOperand &use) {
      return use.getOwner() != within && use.getOwner() != run;
    });
  }

  // result = init combined with the all-reduced partials of the lanes; the
  // users of the loop's result (recorded before the reduction adds its own)
  // get the result.
  rewriter.setInsertionPointAfter(loop);
  for (unsigned i = 0; i < combiners.size(); ++i) {
    Operation *combiner = combiners[i];
    Value partial = loop.getResult(i);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : partial.getUses())
      uses.push_back(&use);
    Value reduced =
        groupAllReduce(rewriter, loc, partial, context, [&](Value x, Value y) {
          return cloneCombiner(rewriter, combiner, x, y);
        });
    Value result = cloneCombiner(rewriter, combiner, inits[i], reduced);
    for (OpOperand *use : uses)
      rewriter.modifyOpInPlace(use->getOwner(), [&]() { use->set(result); });
  }
  return perLane && perLane <= kMaxUnrolledPerLane;
}

/// Unrolls a distributed loop of unknown length by kDynamicUnroll (the
/// remainder loop lands right after it, before any warp sync that follows).
/// Its lower bound is now lane-dependent and passes the upper bound for a
/// lane beyond the end of a short row; the unroller's trip count assumes it
/// does not (it divides unsigned), so the upper bound is raised to the
/// lower first, which keeps such a lane's loops empty.
void unrollUnknownLength(RewriterBase &rewriter, scf::ForOp loop) {
  rewriter.setInsertionPoint(loop);
  Value upper = arith::MaxSIOp::create(rewriter, loop.getLoc(),
                                       loop.getUpperBound(),
                                       loop.getLowerBound());
  rewriter.modifyOpInPlace(loop, [&]() { loop.setUpperBound(upper); });
  (void)loopUnrollByFactor(loop, kDynamicUnroll);
}

/// Moves `op` into `scf.if lane0`.
void onLane0(RewriterBase &rewriter, Operation *op, Value lane0) {
  rewriter.setInsertionPoint(op);
  auto ifOp = scf::IfOp::create(rewriter, op->getLoc(), lane0,
                                /*withElseRegion=*/false);
  rewriter.moveOpBefore(op, ifOp.thenBlock()->getTerminator());
}

/// The position of element `indices[1:]` in a row of `dest` (row-major).
Value rowOffset(OpBuilder &b, Location loc, Value dest, ValueRange indices) {
  auto type = cast<MemRefType>(dest.getType());
  Value offset = constIndex(b, loc, 0);
  for (int64_t d = 1; d < type.getRank(); ++d) {
    offset = b.createOrFold<arith::MulIOp>(
        loc, offset, constIndex(b, loc, type.getDimSize(d)));
    offset = b.createOrFold<arith::AddIOp>(loc, offset, indices[d]);
  }
  return offset;
}
} // namespace

void hector::gpu::rewriteWarpBody(RewriterBase &rewriter,
                                  const TraversalPlan &plan,
                                  ArrayRef<Operation *> ops,
                                  const WarpContext &context) {
  auto bufferOf = [&](Value dest) -> const BufferedDest * {
    for (const BufferedDest &buffered : plan.buffered)
      if (buffered.dest == dest)
        return &buffered;
    return nullptr;
  };
  // Distributed loops after which the warp synchronises (they hold plain
  // read-modify-writes of a shared row).
  llvm::SmallPtrSet<Operation *, 4> syncAfter;

  // Side effects first (they only look at their enclosing loops), then the
  // loops themselves.
  for (Operation *op : ops) {
    scf::ForOp loop = enclosingDistributed(op, plan);
    if (auto acc = dyn_cast<AccumulateOp>(op)) {
      Location loc = acc.getLoc();
      rewriter.setInsertionPoint(acc);
      scf::IfOp lane0;
      if (!loop) {
        lane0 = scf::IfOp::create(rewriter, loc, context.lane0,
                                  /*withElseRegion=*/false);
        rewriter.setInsertionPoint(lane0.thenBlock()->getTerminator());
      }
      arith::AtomicRMWKind kind =
          atomicKind(acc.getKind(), acc.getValue().getType());
      const BufferedDest *buffered = bufferOf(acc.getDest());
      if (!buffered) {
        emitAtomic(rewriter, loc, kind, acc.getValue(), acc.getDest(),
                   acc.getIndices());
      } else {
        auto [shared, base] = context.buffers.lookup(acc.getDest());
        Value at = arith::AddIOp::create(
            rewriter, loc, base,
            rowOffset(rewriter, loc, acc.getDest(), acc.getIndices()));
        if (buffered->plain) {
          Value old = memref::LoadOp::create(rewriter, loc, shared, at);
          memref::StoreOp::create(
              rewriter, loc,
              combine(rewriter, loc, acc.getKind(), old, acc.getValue()),
              shared, at);
          if (loop) {
            syncAfter.insert(loop);
          } else {
            rewriter.setInsertionPointAfter(lane0);
            emitWarpSync(rewriter, loc, context.mask);
          }
        } else {
          emitAtomic(rewriter, loc, kind, acc.getValue(), shared, at);
        }
      }
      rewriter.eraseOp(acc);
      continue;
    }
    if (isa<memref::StoreOp, memref::AtomicRMWOp>(op) && !loop)
      onLane0(rewriter, op, context.lane0);
  }
  for (Operation *op : ops) {
    if (!plan.distributed.contains(op))
      continue;
    auto loop = cast<scf::ForOp>(op);
    bool unknownLength = !loop.getStaticTripCount();
    bool unroll = distributeLoop(rewriter, loop, context);
    if (syncAfter.contains(op) || plan.syncAfterStores.contains(op)) {
      rewriter.setInsertionPointAfter(op);
      emitWarpSync(rewriter, op->getLoc(), context.mask);
    }
    if (unroll)
      (void)loopUnrollFull(loop);
    else if (unknownLength)
      unrollUnknownLength(rewriter, loop);
  }
}

void hector::gpu::lowerAccumulatesToAtomics(RewriterBase &rewriter,
                                            ArrayRef<AccumulateOp> accs) {
  for (AccumulateOp acc : accs) {
    rewriter.setInsertionPoint(acc);
    emitAtomic(rewriter, acc.getLoc(),
               atomicKind(acc.getKind(), acc.getValue().getType()),
               acc.getValue(), acc.getDest(), acc.getIndices());
    rewriter.eraseOp(acc);
  }
}

void hector::gpu::emitSegmentedAccumulates(OpBuilder &b, Location loc,
                                           Value lane, Value row,
                                           ArrayRef<AccumulateOp> accumulates,
                                           ValueRange values,
                                           ArrayRef<SmallVector<Value>> rest) {
  using mlir::gpu::ShuffleMode;
  using mlir::gpu::ShuffleOp;
  Type i32 = b.getI32Type();
  Value lane32 = arith::IndexCastOp::create(b, loc, i32, lane);
  Value key = arith::IndexCastOp::create(b, loc, i32, row);
  Value zero = constI32(b, loc, 0);
  auto shuffle = [&](Value v, int32_t offset, ShuffleMode mode) {
    return ShuffleOp::create(b, loc, v, offset, kWarpSize, mode)
        .getShuffleResult();
  };
  auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  };

  // Lanes with equal keys form runs (equal rows are mostly adjacent in COO
  // and CSR order; a key that recurs later just starts another run, and a
  // run never spans two keys). start = first lane of my run.
  Value head = arith::OrIOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, lane32, zero),
      cmp(arith::CmpIPredicate::ne, shuffle(key, 1, ShuffleMode::UP), key));
  Value start = arith::SelectOp::create(b, loc, head, lane32, zero);
  for (int32_t offset = 1; offset < kWarpSize; offset *= 2) {
    Value has =
        cmp(arith::CmpIPredicate::sge, lane32, constI32(b, loc, offset));
    Value other = shuffle(start, offset, ShuffleMode::UP);
    start = arith::SelectOp::create(
        b, loc, has, arith::MaxSIOp::create(b, loc, start, other), start);
  }
  // Inclusive segmented scan: after it, the last lane of a run holds the
  // run's combination.
  SmallVector<Value> sums(values.begin(), values.end());
  for (int32_t offset = 1; offset < kWarpSize; offset *= 2) {
    Value from =
        arith::SubIOp::create(b, loc, lane32, constI32(b, loc, offset));
    Value take = arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::sge, from, zero),
        cmp(arith::CmpIPredicate::sge, from, start));
    for (size_t i = 0; i < sums.size(); ++i) {
      Value other = shuffle(sums[i], offset, ShuffleMode::UP);
      Reduction kind = AccumulateOp(accumulates[i]).getKind();
      sums[i] = arith::SelectOp::create(
          b, loc, take, combine(b, loc, kind, sums[i], other), sums[i]);
    }
  }
  Value last = constI32(b, loc, kWarpSize - 1);
  Value tail = arith::OrIOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, lane32, last),
      cmp(arith::CmpIPredicate::ne, shuffle(key, 1, ShuffleMode::DOWN), key));
  Value issue = arith::AndIOp::create(
      b, loc, tail, cmp(arith::CmpIPredicate::sge, key, zero));
  auto ifOp = scf::IfOp::create(b, loc, issue, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  for (size_t i = 0; i < sums.size(); ++i) {
    AccumulateOp acc = accumulates[i];
    Value sum = sums[i];
    SmallVector<Value> indices{row};
    llvm::append_range(indices, rest[i]);
    emitAtomic(b, loc, atomicKind(acc.getKind(), sum.getType()), sum,
               acc.getDest(), indices);
  }
}
