//===- CPUCheckAllocations.cpp - stop at a failed allocation -----*- C++ -*-===//
//
// The CPU runtime's allocator returns NULL for a temporary past the cap on
// the library's temporaries, or one malloc refuses, and records the failure
// in the calling thread's status (runtime/include/hector/temporaries.h).
// Every memref.alloc of a CPU function is checked here, before the parallel
// loops are outlined:
//
//   %a = memref.alloc(...)                %a = memref.alloc(...)
//   ops...                        =>      %p = memref.extract_aligned_pointer_as_index %a
//                                         cf.cond_br (%p == 0), ^fail, ^rest
//                                       ^fail: memref.dealloc (held); return
//                                       ^rest: ops...
//
// in the function's body, and inside a loop or a branch (whose region is a
// single block):
//
//   %a = memref.alloc(...)                %a = memref.alloc(...)
//   ops...                        =>      scf.if (%p == 0) { memref.dealloc (held) }
//   terminator                            else { ops... }
//                                         terminator
//
// after which the body tests hector_cpu_status() following the operation
// that holds the allocation. "Held" is what the block allocated before and
// has not freed yet; a block frees what it allocates (checked).
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

namespace hector {
#define GEN_PASS_DEF_CPUCHECKALLOCATIONS
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

/// The allocation a buffer is a view of (itself if none).
Value allocationOf(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    buffer = view.getViewSource();
  }
  return buffer;
}

bool containsAllocation(Operation *op) {
  return op
      ->walk([](memref::AllocOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

class Checker {
public:
  Checker(func::FuncOp function, func::FuncOp status)
      : function(function), status(status) {}

  /// The function's body; `failure()` after an error was emitted.
  LogicalResult checkBody();

private:
  LogicalResult checkNested(Block *block, SmallVector<Value> held);
  LogicalResult checkOwned(memref::AllocOp alloc);
  /// Branches to a new block that frees `held` and returns when `failed`;
  /// the ops from `rest` on move to the returned continuation block.
  Block *branchOut(OpBuilder &b, Location loc, Value failed,
                   ArrayRef<Value> held, Operation *rest);
  static void release(OpBuilder &b, Location loc, ArrayRef<Value> held);
  static void forget(SmallVector<Value> &held, memref::DeallocOp dealloc);
  static Value isNull(OpBuilder &b, Location loc, Value buffer);

  func::FuncOp function;
  func::FuncOp status;
};

LogicalResult Checker::checkOwned(memref::AllocOp alloc) {
  SmallVector<Value> work = {alloc.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == v)
          llvm::append_range(work, user->getResults());
        continue;
      }
      if (isa<memref::DeallocOp>(user) &&
          user->getBlock() != alloc->getBlock())
        return alloc.emitError(
                   "hector-cpu-check-allocations: this buffer is freed in "
                   "another block than its allocation's, so the path taken "
                   "when an allocation fails could not free it")
                   .attachNote(user->getLoc())
               << "freed here";
    }
  }
  return success();
}

void Checker::release(OpBuilder &b, Location loc, ArrayRef<Value> held) {
  for (Value buffer : llvm::reverse(held))
    memref::DeallocOp::create(b, loc, buffer);
}

void Checker::forget(SmallVector<Value> &held, memref::DeallocOp dealloc) {
  Value freed = allocationOf(dealloc.getMemref());
  llvm::erase(held, freed);
}

Value Checker::isNull(OpBuilder &b, Location loc, Value buffer) {
  Value pointer =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pointer,
                               zero);
}

Block *Checker::branchOut(OpBuilder &b, Location loc, Value failed,
                          ArrayRef<Value> held, Operation *rest) {
  Block *here = rest->getBlock();
  Block *continuation = here->splitBlock(rest);
  Block *failure = b.createBlock(continuation);
  release(b, loc, held);
  func::ReturnOp::create(b, loc);
  b.setInsertionPointToEnd(here);
  cf::CondBranchOp::create(b, loc, failed, failure, continuation);
  return continuation;
}

LogicalResult Checker::checkBody() {
  if (function.getNumResults() != 0)
    return function.emitError(
        "hector-cpu-check-allocations: a function with results allocates "
        "memory; the path taken when an allocation fails would have no "
        "results to return");
  if (!function.getBody().hasOneBlock())
    return function.emitError(
        "hector-cpu-check-allocations: expected a function body of one "
        "block (structured control flow)");
  OpBuilder b(function.getContext());
  SmallVector<Value> held;
  Block *block = &function.getBody().front();
  for (Operation *op = &block->front(); op && op != block->getTerminator();) {
    Operation *next = op->getNextNode();
    Location loc = op->getLoc();
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      forget(held, dealloc);
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (failed(checkOwned(alloc)))
        return failure();
      b.setInsertionPointAfter(alloc);
      Value failed = isNull(b, loc, alloc);
      block = branchOut(b, loc, failed, held, next);
      held.push_back(alloc);
    } else if (op->getNumRegions() && containsAllocation(op)) {
      for (Region &region : op->getRegions())
        for (Block &inner : llvm::make_early_inc_range(region))
          if (failed(checkNested(&inner, {})))
            return failure();
      b.setInsertionPointAfter(op);
      Value code = func::CallOp::create(b, loc, status, ValueRange())
                       .getResult(0);
      Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
      Value failed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           code, zero);
      block = branchOut(b, loc, failed, held, next);
    }
    op = next;
  }
  return success();
}

LogicalResult Checker::checkNested(Block *block, SmallVector<Value> held) {
  OpBuilder b(function.getContext());
  Operation *terminator =
      block->mightHaveTerminator() ? block->getTerminator() : nullptr;
  for (Operation *op = &block->front(); op && op != terminator;) {
    Operation *next = op->getNextNode();
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      forget(held, dealloc);
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (failed(checkOwned(alloc)))
        return failure();
      // The rest of the block runs only with the buffer; nothing after the
      // block may read what it defines.
      if (terminator)
        for (Operation *later = next; later && later != terminator;
             later = later->getNextNode())
          for (Value result : later->getResults())
            for (Operation *user : result.getUsers())
              if (Operation *owner = block->findAncestorOpInBlock(*user);
                  !owner || owner == terminator)
                return alloc.emitError(
                  "hector-cpu-check-allocations: cannot guard the rest of "
                  "this allocation's block: its terminator or code after the "
                  "block uses values it defines");
      Location loc = alloc.getLoc();
      b.setInsertionPointAfter(alloc);
      Value failed = isNull(b, loc, alloc);
      auto guard = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/true);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      release(b, loc, held);
      Block *rest = guard.elseBlock();
      Operation *restEnd = rest->getTerminator();
      for (Operation *later = next; later && later != terminator;) {
        Operation *after = later->getNextNode();
        later->moveBefore(restEnd);
        later = after;
      }
      held.push_back(alloc);
      return checkNested(rest, std::move(held));
    } else if (op->getNumRegions() && containsAllocation(op)) {
      for (Region &region : op->getRegions())
        for (Block &inner : llvm::make_early_inc_range(region))
          if (failed(checkNested(&inner, {})))
            return failure();
    }
    op = next;
  }
  return success();
}

/// `int32_t hector_cpu_status(void)`, declared once per module.
func::FuncOp declareStatus(ModuleOp module, SymbolTable &symbols) {
  MLIRContext *ctx = module.getContext();
  auto type = FunctionType::get(ctx, {}, {IntegerType::get(ctx, 32)});
  if (auto existing = symbols.lookup<func::FuncOp>(hector::kCPUStatus))
    return existing.getFunctionType() == type ? existing : func::FuncOp();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto decl =
      func::FuncOp::create(b, module.getLoc(), hector::kCPUStatus, type);
  decl.setPrivate();
  symbols.insert(decl);
  return decl;
}

class CPUCheckAllocationsPass
    : public hector::impl::CPUCheckAllocationsBase<CPUCheckAllocationsPass> {
public:
  using CPUCheckAllocationsBase::CPUCheckAllocationsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() && containsAllocation(function))
        functions.push_back(function);
    if (functions.empty())
      return;
    SymbolTable symbols(module);
    func::FuncOp status = declareStatus(module, symbols);
    if (!status) {
      module.emitError("hector-cpu-check-allocations: '")
          << hector::kCPUStatus << "' is already declared with another type";
      return signalPassFailure();
    }
    for (func::FuncOp function : functions)
      if (failed(Checker(function, status).checkBody()))
        return signalPassFailure();
  }
};

} // namespace
