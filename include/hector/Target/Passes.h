//===- Passes.h - passes of Hector's backends -------------------*- C++ -*-===//
//
// The backends' own passes, declared in Passes.td (docs/passes/
// HectorTargetPasses.md): the CUDA mapping of host loops and memory, and the
// CPU's vectorised GEMMs, partitioned traversals and thread pool.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_PASSES_H
#define HECTOR_TARGET_PASSES_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>

namespace hector {

/// Threads per block the GPU mapping uses unless told otherwise.
constexpr int64_t kDefaultGPUBlockSize = 256;

#define GEN_PASS_DECL
#include "hector/Target/Passes.h.inc"

/// The CPU runtime's parallel loop (lib/Target/CPURuntime/CPURuntime.c):
/// `void hector_cpu_parallel_for(void (*body)(int64_t begin, int64_t end,
/// void *context), void *context, int64_t total)` runs body over disjoint
/// ranges covering [0, total) on the library's threads.
constexpr llvm::StringLiteral kCPUParallelFor = "hector_cpu_parallel_for";
/// `int32_t hector_cpu_num_threads(void)`: the threads a parallel loop of
/// the CPU runtime would use now (HECTOR_NUM_THREADS, OMP_NUM_THREADS, CPUs).
constexpr llvm::StringLiteral kCPUNumThreads = "hector_cpu_num_threads";

/// `int32_t hector_cpu_status(void)`: the calling thread's status in the CPU
/// runtime (runtime/include/hector/temporaries.h), non-zero after a failed
/// allocation.
constexpr llvm::StringLiteral kCPUStatus = "hector_cpu_status";

/// Registers the backends' passes (Passes.td) with the global registry,
/// for hector-opt and the textual pipelines of hectorc.
void registerBackendPasses();

} // namespace hector

#endif // HECTOR_TARGET_PASSES_H
