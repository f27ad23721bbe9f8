//===- Passes.h - Hector conversion passes ----------------------*- C++ -*-===//

#ifndef HECTOR_CONVERSION_PASSES_H
#define HECTOR_CONVERSION_PASSES_H

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hector {

/// The discardable attribute by which htmpl-to-gpu asks, on ops of a launch
/// body, for a number of resident blocks per SM; hector-kernel-occupancy
/// moves it to the outlined kernel (gpu.launch attributes do not survive
/// outlining).
inline constexpr llvm::StringLiteral kMinBlocksPerSMAttr =
    "hector.min_blocks_per_sm";

#define GEN_PASS_DECL
#include "hector/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hector/Conversion/Passes.h.inc"

} // namespace hector

#endif // HECTOR_CONVERSION_PASSES_H
