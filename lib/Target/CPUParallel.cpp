//===- CPUParallel.cpp - parallel loops onto the CPU thread pool -*- C++ -*-===//
//
// Every outermost scf.parallel of a CPU module (one with no parallel loop
// around it and no reductions) is outlined into a function over a range of
// its linearised iterations, and replaced by one call to the thread pool
// that the library carries (lib/Target/CPURuntime/CPURuntime.c):
//
//   scf.parallel (%i, %j) = (lb0, lb1) to (ub0, ub1) step (s0, s1) { body }
// =>
//   n0 = max(0, ceildiv(ub0 - lb0, s0)), n1 = ..., total = n0 * n1
//   ctx = {captured values..., lb0, lb1, s0, s1, n1}   (an alloca)
//   hector_cpu_parallel_for(@f_parallel_K, ctx, total)
//
//   func.func private @f_parallel_K(%lo: index, %hi: index, %ctx: !llvm.ptr) {
//     captured values loaded from ctx
//     scf.for %l = %lo to %hi { %i = lb0 + (%l / n1) * s0
//                               %j = lb1 + (%l mod n1) * s1 ; body } }
//
// The pool hands each thread disjoint ranges, so iterations run in parallel
// exactly as scf.parallel allows; what iterations share they update through
// memref.atomic_rmw (htmpl.accumulate). Captured values travel in their
// LLVM form (a memref as its descriptor): the casts to and from it meet the
// memref lowering's own and vanish in reconcile-unrealized-casts. Nested
// parallel loops stay in the outlined body and run sequentially there.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

namespace hector {
#define GEN_PASS_DEF_CPUPARALLEL
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

class CPUParallelPass
    : public hector::impl::CPUParallelBase<CPUParallelPass> {
public:
  using CPUParallelBase::CPUParallelBase;

  void runOnOperation() override;

private:
  LogicalResult outline(scf::ParallelOp loop, func::FuncOp parent,
                        func::FuncOp poolFunction, SymbolTable &symbols,
                        const LLVMTypeConverter &converter);
};

/// The pool's entry point, declared once per module.
func::FuncOp declarePool(ModuleOp module, SymbolTable &symbols,
                         FunctionType bodyType) {
  MLIRContext *ctx = module.getContext();
  auto type = FunctionType::get(
      ctx,
      {bodyType, LLVM::LLVMPointerType::get(ctx), IndexType::get(ctx)}, {});
  if (auto existing = symbols.lookup<func::FuncOp>(hector::kCPUParallelFor))
    return existing.getFunctionType() == type ? existing : func::FuncOp();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto decl = func::FuncOp::create(b, module.getLoc(),
                                   hector::kCPUParallelFor, type);
  decl.setPrivate();
  symbols.insert(decl);
  return decl;
}

void CPUParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  SymbolTable symbols(module);
  LLVMTypeConverter converter(ctx);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto index = IndexType::get(ctx);
  auto bodyType = FunctionType::get(ctx, {index, index, ptr}, {});

  // Outermost parallel loops without reductions, per function.
  SmallVector<std::pair<scf::ParallelOp, func::FuncOp>> loops;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    function.walk([&](scf::ParallelOp loop) {
      if (loop.getNumResults() == 0 &&
          !loop->getParentOfType<scf::ParallelOp>())
        loops.push_back({loop, function});
    });
  }
  if (loops.empty())
    return;
  func::FuncOp pool = declarePool(module, symbols, bodyType);
  if (!pool) {
    module.emitError("hector-cpu-parallel: '")
        << hector::kCPUParallelFor
        << "' is already declared with another type";
    return signalPassFailure();
  }
  for (auto [loop, parent] : loops)
    if (failed(outline(loop, parent, pool, symbols, converter)))
      return signalPassFailure();
}

LogicalResult CPUParallelPass::outline(scf::ParallelOp loop,
                                       func::FuncOp parent,
                                       func::FuncOp poolFunction,
                                       SymbolTable &symbols,
                                       const LLVMTypeConverter &converter) {
  MLIRContext *ctx = loop.getContext();
  Location loc = loop.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  Type index = IndexType::get(ctx);

  // Values the body uses from outside: constants are rematerialised in the
  // outlined function, everything else travels in the context.
  SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  SmallVector<Value> constants, captured;
  SmallVector<Type> fields;
  for (Value value : used) {
    Operation *def = value.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumResults() == 1) {
      constants.push_back(value);
      continue;
    }
    Type type = value.getType();
    Type field = isa<IndexType>(type) ? Type(i64) : converter.convertType(type);
    if (!field || !LLVM::isCompatibleType(field)) {
      // A value we cannot pass: leave the loop sequential.
      return success();
    }
    captured.push_back(value);
    fields.push_back(field);
  }

  OpBuilder b(loop);
  // Trip counts (steps are positive: scf.parallel verifies it), the total,
  // and what delinearising needs (lbs, steps, counts of dims 1..).
  unsigned rank = loop.getNumLoops();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> counts;
  for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep())) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value n = arith::MaxSIOp::create(
        b, loc, arith::CeilDivSIOp::create(b, loc, span, step), zero);
    counts.push_back(n);
    total = arith::MulIOp::create(b, loc, total, n);
  }
  SmallVector<Value> shape;
  for (unsigned d = 0; d < rank; ++d)
    shape.append({loop.getLowerBound()[d], loop.getStep()[d]});
  for (unsigned d = 1; d < rank; ++d)
    shape.push_back(counts[d]);
  for (unsigned k = 0; k < shape.size(); ++k)
    fields.push_back(i64);
  auto structType = LLVM::LLVMStructType::getLiteral(ctx, fields);

  // The outlined function.
  std::string name =
      (parent.getSymName() + "_parallel").str();
  OpBuilder moduleBuilder(parent);
  auto bodyType = FunctionType::get(ctx, {index, index, ptr}, {});
  auto outlined = func::FuncOp::create(moduleBuilder, loc, name, bodyType);
  outlined.setPrivate();
  // Internal in LLVM IR too: not exported from the library.
  outlined->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  symbols.insert(outlined); // renames on clashes: _parallel_0, _1, ...
  Block *entry = outlined.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockBegin(entry);
  Value lo = entry->getArgument(0), hi = entry->getArgument(1),
        context = entry->getArgument(2);
  IRMapping mapping;
  for (Value value : constants)
    mapping.map(value, fb.clone(*value.getDefiningOp())->getResult(0));
  auto field = [&](unsigned k) -> Value {
    Value at = LLVM::GEPOp::create(
        fb, loc, ptr, structType, context,
        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(k)});
    return LLVM::LoadOp::create(fb, loc, fields[k], at);
  };
  for (auto [k, value] : llvm::enumerate(captured)) {
    Value loaded = field(k);
    Type type = value.getType();
    if (isa<IndexType>(type))
      loaded = arith::IndexCastOp::create(fb, loc, index, loaded);
    else if (loaded.getType() != type)
      loaded = UnrealizedConversionCastOp::create(fb, loc, type, loaded)
                   .getResult(0);
    mapping.map(value, loaded);
  }
  SmallVector<Value> shapeValues;
  for (unsigned k = 0; k < shape.size(); ++k)
    shapeValues.push_back(arith::IndexCastOp::create(
        fb, loc, index, field(captured.size() + k)));
  Value one = arith::ConstantIndexOp::create(fb, loc, 1);
  auto range = scf::ForOp::create(fb, loc, lo, hi, one);
  fb.setInsertionPointToStart(range.getBody());
  // Delinearise, last dimension fastest.
  SmallVector<Value> ivs(rank);
  Value rest = range.getInductionVar();
  for (unsigned d = rank; d-- > 0;) {
    Value position = rest;
    if (d != 0) {
      Value count = shapeValues[2 * rank + d - 1];
      position = arith::RemUIOp::create(fb, loc, rest, count);
      rest = arith::DivUIOp::create(fb, loc, rest, count);
    }
    Value offset =
        arith::MulIOp::create(fb, loc, position, shapeValues[2 * d + 1]);
    ivs[d] = arith::AddIOp::create(fb, loc, shapeValues[2 * d], offset);
  }
  for (auto [iv, value] : llvm::zip(loop.getInductionVars(), ivs))
    mapping.map(iv, value);
  for (Operation &op : loop.getBody()->without_terminator())
    fb.clone(op, mapping);
  fb.setInsertionPointToEnd(entry);
  func::ReturnOp::create(fb, loc);

  // The call site: the context is one alloca at the top of the function (a
  // loop around the call must not grow the stack), filled before the call.
  OpBuilder top = OpBuilder::atBlockBegin(&parent.getBody().front());
  Value size = LLVM::ConstantOp::create(top, loc, i64, 1);
  Value context0 =
      LLVM::AllocaOp::create(top, loc, ptr, structType, size, /*alignment=*/0);
  auto store = [&](Value value, unsigned k) {
    Value at = LLVM::GEPOp::create(
        b, loc, ptr, structType, context0,
        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(k)});
    LLVM::StoreOp::create(b, loc, value, at);
  };
  for (auto [k, value] : llvm::enumerate(captured)) {
    Value stored = value;
    if (isa<IndexType>(value.getType()))
      stored = arith::IndexCastOp::create(b, loc, i64, value);
    else if (stored.getType() != fields[k])
      stored = UnrealizedConversionCastOp::create(b, loc, fields[k], value)
                   .getResult(0);
    store(stored, k);
  }
  for (auto [k, value] : llvm::enumerate(shape))
    store(arith::IndexCastOp::create(b, loc, i64, value), captured.size() + k);
  Value fn = func::ConstantOp::create(b, loc, bodyType,
                                      SymbolRefAttr::get(outlined));
  func::CallOp::create(b, loc, poolFunction, ValueRange{fn, context0, total});
  loop.erase();
  return success();
}

} // namespace

