//===- Passes.td - passes of Hector's backends -------------*- tablegen -*-===//
//
// The backends' own passes (docs/backends.md). CUDA: they turn the parallel
// loops and host allocations that htmpl-to-loops produces into what
// upstream's GPU lowering accepts. CPU: parallel loops on a thread pool and
// checked heap allocations. (The CPU's lowerings of htmpl instances,
// hector-cpu-gemm and hector-cpu-traversal, are conversions:
// include/hector/Conversion/Passes.td.)
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_PASSES_TD
#define HECTOR_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Both targets
//===----------------------------------------------------------------------===//

def PrepareEntryPoints : Pass<"hector-prepare-entry-points", "mlir::ModuleOp"> {
  let summary = "Check that the entry points fit the runtime ABI and mark them "
                "for their C interface";
  let description = [{
    Finds the entry points of a module lowered to `func.func` over memrefs
    (the functions marked `hector.entry`, or else every public function with
    a body), checks that each fits the runtime ABI (no results; memref
    arguments of a supported element type with the identity layout; a
    well-formed `hector.arg` where present; host-resident arguments only
    read) and marks it `llvm.emit_c_interface`, so that the LLVM lowering
    exports `_mlir_ciface_<name>`. The hector pipelines run it after the
    loops stage; hectorc calls the same check directly, since it also
    writes the entries' description into the library's manifest.
  }];
}

//===----------------------------------------------------------------------===//
// CUDA
//===----------------------------------------------------------------------===//

def MapParallelLoops : Pass<"hector-map-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Map outermost scf.parallel loops of host code onto a 1-D GPU grid";
  let description = [{
    Maps every outermost *flat* `scf.parallel` of host code (one with no
    parallel loop inside) onto a 1-D GPU grid: all dimensions are collapsed
    into one (the last one varying fastest, so that neighbouring threads
    touch neighbouring elements) and split into blocks of `block-size`
    threads (`hector.block_size` on a loop overrides it). The loops then
    carry the mapping `convert-parallel-loops-to-gpu` reads. Nests (blocks x
    threads, as htmpl-to-loops shapes them) are left to upstream's
    gpu-map-parallel-loops. A loop with reductions is an error.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t",
           /*default=*/"::hector::kDefaultGPUBlockSize",
           "GPU threads per block">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def HostMemoryToGPU : Pass<"hector-host-memory-to-gpu", "mlir::ModuleOp"> {
  let summary = "Turn host allocations and copies into gpu.alloc/dealloc/memcpy "
                "and reject host accesses to device memory";
  let description = [{
    Host code's `memref.alloc` / `dealloc` / `copy` become `gpu.alloc` /
    `dealloc` / `memcpy`, since every buffer of a CUDA entry point lives in
    device memory. Host code that would still read or write a buffer
    (outside a `gpu.launch`), and host stack memory used by a kernel, are
    reported as errors: either would fail only at run time.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect"
  ];
}

def CheckHostResident : Pass<"hector-check-host-resident", "mlir::ModuleOp"> {
  let summary = "Check that host-resident entry arguments are only read, in "
                "place, by GPU kernels (never copied, written or read on the host)";
  let description = [{
    An entry point argument marked `host_resident = true` in its
    `hector.arg` lives in pinned, mapped host memory; it may only be read by
    GPU kernels (`gpu.launch` bodies), in place. A write, a host read or a
    copy (which would become a staging copy to the device), or a use by an
    op that states no memory effects is an error.
  }];
}

def AlignWorkgroupMemory : Pass<"hector-align-workgroup-memory", "mlir::ModuleOp"> {
  let summary = "Align every workgroup buffer of the outlined kernels to 16 "
                "bytes (for vector accesses)";
  let description = [{
    Every workgroup (shared memory) buffer of an outlined kernel gets
    `llvm.align = 16`, so that the 16-byte vector accesses of the GEMM
    kernels are aligned (LLVM would otherwise align a buffer to its element
    only).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def KernelOccupancy : Pass<"hector-kernel-occupancy", "mlir::ModuleOp"> {
  let summary = "Turn the occupancy requests of a kernel's ops into "
                "`nvvm.minctasm` on the outlined kernel";
  let description = [{
    htmpl-to-gpu asks for a number of resident blocks per SM by tagging ops
    of a launch body with `hector.min_blocks_per_sm` (an attribute of
    `gpu.launch` would not survive kernel outlining). This pass gives each
    outlined kernel (`gpu.func` with the `kernel` attribute) the largest
    request among its ops as `nvvm.minctasm`, so that ptxas limits its
    registers to fit that many blocks, and removes the tags. A request that
    is not a positive integer is an error.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

//===----------------------------------------------------------------------===//
// CPU
//===----------------------------------------------------------------------===//

def CPUParallel : Pass<"hector-cpu-parallel", "mlir::ModuleOp"> {
  let summary = "Run outermost scf.parallel loops on the CPU library's thread pool";
  let description = [{
    Outlines every outermost `scf.parallel` (without reductions) of a CPU
    module into a function over a range of its linearised iterations,
    called through the CPU runtime's `hector_cpu_parallel_for`; the values
    it uses travel in a context struct. Loops with reductions or values that
    have no LLVM form stay sequential.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect"
  ];
}

def CPUCheckAllocations : Pass<"hector-cpu-check-allocations", "mlir::ModuleOp"> {
  let summary = "Check every heap allocation of CPU code: on failure, free "
                "what the function holds and return";
  let description = [{
    The CPU runtime's allocator returns NULL for a temporary past the cap on
    the library's temporaries, or one malloc refuses, and records
    `HECTOR_ERROR_OUT_OF_MEMORY` in the calling thread's status
    (`runtime/include/hector/temporaries.h`). This pass makes the code stop
    there instead of writing through NULL:

    - a `memref.alloc` in a function's body is followed by a test of its
      pointer; when it is NULL, a block of its own frees the buffers the
      function holds at that point and returns;
    - a `memref.alloc` inside a loop or a branch (a per-chunk buffer of a
      parallel loop) guards the rest of its block: when it is NULL, the
      buffers that block holds are freed and the rest is skipped (the
      failure is recorded in the status of the thread whose call the loop
      serves), and the function body tests `hector_cpu_status()` after the
      operation that holds it, freeing and returning as above.

    The buffers held are those allocated earlier in the same block and not
    yet freed there. An allocation freed in another block than its own, a
    guarded rest whose results its block's terminator uses, and a function
    with results that allocates are errors: the failure path could not be
    built without leaking or inventing values.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // HECTOR_TARGET_PASSES_TD
