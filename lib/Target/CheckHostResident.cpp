//===- CheckHostResident.cpp - host-resident reads in place -----*- C++ -*-===//
//
// An entry point argument with `host_resident = true` in its `hector.arg`
// lives in pinned, mapped host memory (hectorc --host-resident). GPU kernels
// read it there over PCIe; that is the whole point, so any other use would
// break the promise silently: a memref.copy would become a staging copy to
// the device (hector-host-memory-to-gpu), host code reading it would read
// the mapping on the CPU, and a write would modify the caller's features.
// This pass runs once every loop is a gpu.launch and reports such uses at
// the operation.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

namespace hector {
#define GEN_PASS_DEF_CHECKHOSTRESIDENT
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

bool insideKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

/// Whether `op` reads / writes the buffer `v`; nullopt when it states no
/// effects (a call, an unknown op), which may do either.
std::optional<std::pair<bool, bool>> accessOf(Operation *op, Value v) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return std::nullopt;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  bool reads = false, writes = false;
  for (const MemoryEffects::EffectInstance &effect : list) {
    // An effect on no particular value may be on any buffer.
    if (effect.getValue() && effect.getValue() != v)
      continue;
    reads |= isa<MemoryEffects::Read>(effect.getEffect());
    writes |= isa<MemoryEffects::Write>(effect.getEffect());
  }
  return std::make_pair(reads, writes);
}

class CheckHostResidentPass
    : public hector::impl::CheckHostResidentBase<CheckHostResidentPass> {
public:
  using CheckHostResidentBase::CheckHostResidentBase;

  void runOnOperation() override {
    bool failedCheck = false;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (BlockArgument arg : func.getArguments()) {
        auto dict = func.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                                          "hector.arg");
        auto flag = dict ? dict.getAs<BoolAttr>("host_resident") : nullptr;
        if (!flag || !flag.getValue())
          continue;
        std::string name = "arg" + std::to_string(arg.getArgNumber());
        if (auto text = dict.getAs<StringAttr>("name"))
          name = text.str();
        if (failed(checkUses(arg, name)))
          failedCheck = true;
      }
    }
    if (failedCheck)
      signalPassFailure();
  }

private:
  static LogicalResult checkUses(Value arg, StringRef name) {
    SmallVector<Value> work = {arg};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
          if (view.getViewSource() == v) {
            llvm::append_range(work, user->getResults());
            continue;
          }
        }
        std::optional<std::pair<bool, bool>> access = accessOf(user, v);
        auto fail = [&]() {
          return user->emitError("host-resident argument '") << name << "' ";
        };
        if (!access)
          return fail() << "is passed to '" << user->getName()
                        << "', which may copy or write it; host-resident "
                           "inputs are only read in place by GPU kernels";
        auto [reads, writes] = *access;
        if (writes)
          return fail() << "is written here; host-resident inputs are "
                           "read-only";
        if (reads && !insideKernel(user))
          return fail() << "is read by host code here (a copy to the device "
                           "or a host loop); host-resident inputs are only "
                           "read in place by GPU kernels";
      }
    }
    return success();
  }
};

} // namespace

