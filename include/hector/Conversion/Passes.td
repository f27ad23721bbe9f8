//===- Passes.td - Hector conversion passes ----------------*- tablegen -*-===//

#ifndef HECTOR_CONVERSION_PASSES_TD
#define HECTOR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def HGraphToHTmpl : Pass<"hgraph-to-htmpl", "mlir::ModuleOp"> {
  let summary = "Lower hgraph functions to htmpl GEMM and traversal instances";
  let description = [{
    Rewrites every `hgraph.func` into a `func.func` entry point over
    `memref`s (the runtime ABI of docs/compilation.md): graph arrays built by
    the runtime's preprocessing, node features, weights and preallocated
    outputs. The body is a sequence of `htmpl.gemm` and `htmpl.traversal`
    instances chosen greedily (GEMM first, then fused traversals, then a
    generic traversal fallback) plus `memref.alloc` for the temporaries that
    must reach memory.

    `edge_softmax` stores its scores (unless they are in memory) and
    reduces them in one node traversal over destinations: each destination
    walks its incoming edges for the maximum, then for the sum of
    exponentials, both kept in registers (a warp's lanes split the edges)
    and stored once. `split-softmax` lowers it as two edge traversals that
    accumulate the maximum and then the sum with atomics, for comparison.

    Where the softmax's only use is `aggregate sum (scale α z) to dst` (RGAT
    and HGT inference), the softmax, scale and aggregation lower to one
    `htmpl.softmax_aggregate` instead: one walk of each destination's CSR row
    with an online softmax; α is never stored. It is off by default: on the
    H200 it was slower on graphs with hubs or high in-degrees (one warp walks
    a destination's whole row; docs/performance.md, 2026-11-28).
  }];
  let options = [
    Option<"splitSoftmax", "split-softmax", "bool", /*default=*/"false",
           "Lower edge_softmax as two edge traversals accumulating the maximum "
           "and then the sum of exponentials, instead of one reduction per "
           "destination">,
    Option<"fuseSoftmaxAggregate", "fuse-softmax-aggregate", "bool",
           /*default=*/"false",
           "Lower an edge_softmax whose only use is a weighted sum into the "
           "destinations together with it (htmpl.softmax_aggregate)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::hector::htmpl::HTmplDialect",
    // The address argument of the offload runtime calls.
    "::mlir::LLVM::LLVMDialect"
  ];
}

def HTmplToLoops : Pass<"htmpl-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower htmpl instances to parallel loop nests";
  let description = [{
    Rewrites `htmpl.gemm` and `htmpl.traversal` into `scf.parallel` loop nests
    over `memref`s with `arith`/`math` bodies; `htmpl.accumulate` becomes
    `memref.atomic_rmw`. The result runs on the CPU (parallel loops lowered to
    sequential ones) and maps onto GPU threads (parallel loops mapped to
    blocks and threads).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"
  ];
}

def HTmplToGPU : Pass<"htmpl-to-gpu", "mlir::ModuleOp"> {
  let summary = "Lower htmpl instances to GPU kernels (tiled GEMM, warp-reduced traversals)";
  let description = [{
    The GPU specialisation of the templates: each `htmpl.gemm` becomes a
    `gpu.launch` that tiles through workgroup (shared) memory with the
    instance's tile, coarsening and launch bounds, gathering, segmenting and
    scattering inline; each `htmpl.traversal` becomes a `gpu.launch` that
    spreads features over the lanes of a warp and reduces
    `htmpl.accumulate`s into the same destination row inside the warp before
    one atomic, so a hub with millions of in-edges does not serialise a
    kernel. Host-side memrefs are device pointers.

    A traversal whose feature loops have static lengths runs each instance on
    a group of lanes sized to those loops (16 or 32 lanes, at most 4
    iterations per lane: two 64-wide instances per warp), its split loops
    unrolled and its float math contracted; `lanes-per-instance` fixes that
    group size instead (for tuning and tests).

    `precision=tf32` multiplies the row-mode GEMMs that get the 16-byte
    vector kernel on tensor cores (`nvgpu.mma.sync`, m16n8k8, inputs rounded
    to TF32, fp32 accumulation); `fp32`, the default, keeps every product an
    fp32 FMA.

    The vector kernel stages its tiles with asynchronous copies
    (`nvgpu.device_async_copy`, cp.async: global to shared memory without
    registers, double-buffered) unless `gemm-staging=registers` or TF32
    (which rounds on the way); `gemm-blocks-per-sm=N` (default 4: 64
    registers at 256 threads) asks ptxas to fit N blocks of those kernels on
    an SM (`hector.min_blocks_per_sm` on the kernel's barriers, which
    hector-kernel-occupancy turns into `nvvm.minctasm` once the kernel is
    outlined); 0 leaves the registers to ptxas.
  }];
  let options = [
    Option<"lanesPerInstance", "lanes-per-instance", "int64_t", /*default=*/"0",
           "Lanes per instance of warp-mapped traversals: 1, 2, 4, 8, 16 or "
           "32; 0 chooses per traversal">,
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "Arithmetic of row-mode GEMM products: fp32 (FMA, the default) "
           "or tf32 (tensor cores where the vector kernel runs)">,
    Option<"gemmStaging", "gemm-staging", "std::string", /*default=*/"\"async\"",
           "How the fp32 vector GEMM kernel stages its tiles: async "
           "(cp.async, double-buffered) or registers">,
    Option<"gemmBlocksPerSM", "gemm-blocks-per-sm", "int64_t", /*default=*/"4",
           "Blocks per SM the asynchronously staged GEMM kernels are "
           "register-limited for (0: as ptxas chooses)">
  ];
  // NVVM for warp barriers around warp-private buffers and TF32 rounding,
  // LLVM for scoped float-max atomics, NVGPU for tensor-core products.
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

//===----------------------------------------------------------------------===//
// htmpl to CPU loops (lib/Conversion/HTmplToCPU): run before htmpl-to-loops,
// which lowers whatever instances they leave.
//===----------------------------------------------------------------------===//

def CPUGemm : Pass<"hector-cpu-gemm", "mlir::ModuleOp"> {
  let summary = "Lower htmpl.gemm instances to vectorised CPU loops (the rest "
                "is left to htmpl-to-loops)";
  let description = [{
    Lowers the `htmpl.gemm` instances of a CPU module to loops whose
    innermost dimension is contiguous and explicitly vectorised (vector
    accumulators over output columns; per-chunk private buffers for outer
    products). Scatters with atomic stores run per owner of the output rows
    (`hector_cpu_num_threads` parts), without atomics and in row order.
    Instances with dynamic weight sizes are left as they are for
    htmpl-to-loops.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def CPUTraversal : Pass<"hector-cpu-traversal", "mlir::ModuleOp"> {
  let summary = "Partition COO edge traversals by destination (and pair-order "
                "ones by pair) so that accumulates into those rows need no atomics";
  let description = [{
    A COO edge traversal whose accumulates go into destination rows is split
    by blocks of destination nodes (each edge type's run of edges into a
    block found by binary search in the canonical (type, destination)
    order); one whose accumulates go into edge-type rows only runs one
    iteration per edge type; a pair-order traversal whose accumulates go
    into pair rows runs one iteration per block of pairs. Those accumulates
    then need no atomics. A run-time check of the order falls back to the
    unchanged traversal (atomics, through htmpl-to-loops) for arrays that
    are not sorted.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // HECTOR_CONVERSION_PASSES_TD
