//===- Passes.h - passes of Hector's backends -------------------*- C++ -*-===//
//
// The CUDA backend's own passes: they turn the parallel loops and host
// allocations that htmpl-to-loops produces into something upstream's GPU
// lowering accepts (see docs/backends.md).
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_PASSES_H
#define HECTOR_TARGET_PASSES_H

#include "mlir/Pass/Pass.h"

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

/// Registers these passes with the global registry (for hector-opt and the
/// textual pipelines of hectorc).
void registerBackendPasses();

} // namespace hector

#endif // HECTOR_TARGET_PASSES_H
