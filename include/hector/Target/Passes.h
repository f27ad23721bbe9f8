//===- Passes.h - passes of Hector's backends -------------------*- C++ -*-===//
//
// The backends' own passes. CUDA: they turn the parallel loops and host
// allocations that htmpl-to-loops produces into something upstream's GPU
// lowering accepts. CPU: vectorised GEMMs and parallel loops run on a
// thread pool (see docs/backends.md).
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

/// `hector-map-parallel-loops`: maps every outermost *flat* `scf.parallel`
/// of host code (one with no parallel loop inside) onto a 1-D GPU grid: all
/// dimensions are collapsed into one (the last one varying fastest, so that
/// neighbouring threads touch neighbouring elements) and split into blocks
/// of `blockSize` threads (`hector.block_size` on a loop overrides it). The
/// loops then carry the mapping `convert-parallel-loops-to-gpu` reads. Nests
/// (blocks x threads, as htmpl-to-loops shapes them) are left to upstream's
/// gpu-map-parallel-loops.
std::unique_ptr<mlir::Pass>
createMapParallelLoopsPass(int64_t blockSize = kDefaultGPUBlockSize);

/// `hector-host-memory-to-gpu`: host code's `memref.alloc`/`dealloc`/`copy`
/// become `gpu.alloc`/`dealloc`/`memcpy`, since every buffer of a CUDA entry
/// point lives in device memory. Host code that would still read or write a
/// buffer (outside a `gpu.launch`), and host stack memory used by a kernel,
/// are reported as errors: either would fail only at run time.
std::unique_ptr<mlir::Pass> createHostMemoryToGPUPass();

/// `hector-check-host-resident`: an entry point argument marked
/// `host_resident = true` in its `hector.arg` lives in pinned, mapped host
/// memory; it may only be read by GPU kernels (gpu.launch bodies), in place.
/// A write, a host read or a copy (which would become a staging copy to the
/// device), or a use by an op that states no memory effects is an error.
std::unique_ptr<mlir::Pass> createCheckHostResidentPass();

/// `hector-align-workgroup-memory`: every workgroup (shared memory) buffer
/// of an outlined kernel gets `llvm.align = 16`, so that the 16-byte vector
/// accesses of the GEMM kernels are aligned (LLVM would otherwise align a
/// buffer to its element only).
std::unique_ptr<mlir::Pass> createAlignWorkgroupMemoryPass();

/// `hector-cpu-gemm`: lowers the `htmpl.gemm` instances of a CPU module to
/// loops whose innermost dimension is contiguous and explicitly vectorised
/// (vector accumulators over output columns; per-chunk private buffers for
/// outer products). Scatters with atomic stores run per owner of the output
/// rows (kCPUNumThreads parts), without atomics and in row order. Instances
/// with dynamic weight sizes are left as they are for htmpl-to-loops.
std::unique_ptr<mlir::Pass> createCPUGemmPass();

/// `hector-cpu-traversal`: COO edge traversals whose accumulates go into
/// destination rows are split by blocks of destination nodes (each edge
/// type's run of edges into a block found by binary search in the canonical
/// (type, destination) order), so that those accumulates need no atomics.
/// A run-time check of the order falls back to the unchanged traversal
/// (atomics, through htmpl-to-loops) for unsorted arrays.
std::unique_ptr<mlir::Pass> createCPUTraversalPass();

/// The CPU runtime's parallel loop (lib/Target/CPURuntime/CPURuntime.c):
/// `void hector_cpu_parallel_for(void (*body)(int64_t begin, int64_t end,
/// void *context), void *context, int64_t total)` runs body over disjoint
/// ranges covering [0, total) on the library's threads.
constexpr llvm::StringLiteral kCPUParallelFor = "hector_cpu_parallel_for";
/// `int32_t hector_cpu_num_threads(void)`: the threads a parallel loop of
/// the CPU runtime would use now (HECTOR_NUM_THREADS, OMP_NUM_THREADS, CPUs).
constexpr llvm::StringLiteral kCPUNumThreads = "hector_cpu_num_threads";

/// `hector-cpu-parallel`: outlines every outermost `scf.parallel` (without
/// reductions) of a CPU module into a function over a range of its
/// linearised iterations, called through `hector_cpu_parallel_for`; the
/// values it uses travel in a context struct. Loops with reductions or
/// values that have no LLVM form stay sequential.
std::unique_ptr<mlir::Pass> createCPUParallelPass();

/// Registers the backends' passes with the global registry (for hector-opt
/// and the textual pipelines of hectorc).
void registerBackendPasses();

} // namespace hector

#endif // HECTOR_TARGET_PASSES_H
