//===- CPURuntimeABI.h - functions of the CPU libraries' runtime -*- C++ -*-===//
//
// The functions of the runtime every CPU library carries
// (lib/Target/CPURuntime/CPURuntime.c) that generated code calls, named once
// for the passes that emit the calls (hector-cpu-gemm, hector-cpu-parallel,
// hector-cpu-check-allocations).
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_CPURUNTIMEABI_H
#define HECTOR_CPURUNTIMEABI_H

#include "llvm/ADT/StringRef.h"

namespace hector {

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

} // namespace hector

#endif // HECTOR_CPURUNTIMEABI_H
