//===- Passes.h - passes of Hector's backends -------------------*- C++ -*-===//
//
// The backends' own passes, declared in Passes.td (docs/passes/
// HectorTargetPasses.md): the CUDA mapping of host loops and memory, the
// CPU's thread pool and checked allocations, and the preparation of entry
// points. (The CPU lowering of htmpl instances is in
// hector/Conversion/Passes.h.)
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_PASSES_H
#define HECTOR_TARGET_PASSES_H

#include "hector/CPURuntimeABI.h"

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace hector {

/// Threads per block the GPU mapping uses unless told otherwise.
constexpr int64_t kDefaultGPUBlockSize = 256;

#define GEN_PASS_DECL
#include "hector/Target/Passes.h.inc"

/// Registers the backends' passes (Passes.td) with the global registry,
/// for hector-opt's command line and the pass-manager options of hectorc
/// (--mlir-print-ir-after=<pass>).
void registerBackendPasses();

} // namespace hector

#endif // HECTOR_TARGET_PASSES_H
