//===- AlignWorkgroupMemory.cpp - 16-byte aligned shared memory -*- C++ -*-===//
//
// The GEMM kernels read and write their shared-memory tiles with 16-byte
// vector accesses (ld.shared.v4), which need 16-byte aligned addresses. The
// tiles' rows are padded to multiples of 16 bytes, but the buffers
// themselves become LLVM globals aligned to their element (4 bytes) unless
// their workgroup attribution carries `llvm.align`. gpu.launch has no
// attribution attributes, so this pass sets them on the outlined kernels.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hector {
#define GEN_PASS_DEF_ALIGNWORKGROUPMEMORY
#include "hector/Target/Passes.h.inc"
} // namespace hector

using namespace mlir;

namespace {

class AlignWorkgroupMemoryPass
    : public hector::impl::AlignWorkgroupMemoryBase<AlignWorkgroupMemoryPass> {
public:
  using AlignWorkgroupMemoryBase::AlignWorkgroupMemoryBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    StringAttr name =
        StringAttr::get(context, LLVM::LLVMDialect::getAlignAttrName());
    getOperation().walk([&](gpu::GPUFuncOp func) {
      for (unsigned i = 0, e = func.getNumWorkgroupAttributions(); i < e; ++i) {
        auto current = dyn_cast_or_null<IntegerAttr>(
            func.getWorkgroupAttributionAttr(i, name));
        if (current && current.getInt() >= kWorkgroupAlignment)
          continue;
        func.setWorkgroupAttributionAttr(
            i, name,
            IntegerAttr::get(IntegerType::get(context, 64),
                             kWorkgroupAlignment));
      }
    });
  }

private:
  static constexpr int64_t kWorkgroupAlignment = 16;
};

} // namespace

