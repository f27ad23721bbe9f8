// RUN: hector-opt %s --split-input-file --htmpl-to-gpu="lanes-per-instance=32" --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --split-input-file --htmpl-to-gpu | FileCheck %s --check-prefix=NONE

// Every GEMM and traversal form becomes gpu.launch ops in the host function
// (docs/gpu-templates.md). Host code only computes grid sizes from memref
// sizes; every buffer read happens inside a kernel. No htmpl op survives.
// NONE-NOT: htmpl.

// GEMM, row mode without lists: a 1-D block of launch_bounds threads per 64
// rows; the column tile is narrowed to the 4 output columns (8 x 65 and
// 8 x 5 staged tiles, padded by one column); the reduction steps through
// shared memory between two barriers, then a plain store.
// CHECK-LABEL: func.func @gemm_plain
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<8x4xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK-DAG: %[[C64:[-a-zA-Z0-9_]+]] = arith.constant 64 : index
// CHECK-DAG: %[[C256:[-a-zA-Z0-9_]+]] = arith.constant 256 : index
// CHECK-DAG: %[[C1:[-a-zA-Z0-9_]+]] = arith.constant 1 : index
// CHECK: %[[M:[-a-zA-Z0-9_]+]] = memref.dim %[[LHS]], %{{.*}} : memref<?x8xf32>
// CHECK: %[[TILES:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[M]], %[[C64]] : index
// CHECK: %[[GX:[-a-zA-Z0-9_]+]] = arith.maxsi %[[TILES]], %[[C1]] : index
// CHECK: gpu.launch blocks(%[[BX:[-a-zA-Z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) threads(%[[TX:[-a-zA-Z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) workgroup(%[[A:[-a-zA-Z0-9_]+]] : memref<8x65xf32, #gpu.address_space<workgroup>>, %[[B:[-a-zA-Z0-9_]+]] : memref<8x5xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.load %[[LHS]]
// CHECK: memref.store %{{.*}}, %[[A]]
// CHECK: memref.load %[[RHS]]
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[A]]
// CHECK: memref.load %[[B]]
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.terminator
// CHECK: return
func.func @gemm_plain(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                      %out: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>) {tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Gather list and per-type segments: the grid tiles the gathered rows; a
// block finds the segment of its first row by a binary search over the
// offsets, then runs one pass per segment piece of its rows, staging that
// segment's weight slice (rhs[t]). The gathered row index is read once per
// staged row, outside the reduction loop. Eight k-tiles of 8 are staged per
// barrier (the whole K = 64): 64 x 65 tiles.
// CHECK-LABEL: func.func @gemm_typed_gather
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[ROWS:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<?x64x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[SEG:[-a-zA-Z0-9_]+]]: memref<?xi32>)
// CHECK: %[[M:[-a-zA-Z0-9_]+]] = memref.dim %[[ROWS]], %{{.*}} : memref<?xi32>
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[A:[-a-zA-Z0-9_]+]] : memref<64x65xf32, #gpu.address_space<workgroup>>, %[[B:[-a-zA-Z0-9_]+]] : memref<64x65xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[FIRST:[-a-zA-Z0-9_]+]]:2 = scf.while
// CHECK: memref.load %[[SEG]]
// CHECK: scf.while (%[[T:[-a-zA-Z0-9_]+]] = %[[FIRST]]#0) : (index) -> index
// CHECK: memref.load %[[SEG]][%[[T]]]
// CHECK: scf.condition
// CHECK: } do {
// CHECK: ^bb0(%[[T:[-a-zA-Z0-9_]+]]: index):
// CHECK: scf.if
// CHECK: %[[L:[-a-zA-Z0-9_]+]] = memref.load %[[ROWS]]
// CHECK: memref.load %[[LHS]]
// CHECK: memref.load %[[RHS]][%[[T]], %{{.*}}, %{{.*}}] : memref<?x64x64xf32>
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} = %c0 to %c64 step %c1 iter_args
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[OUT]]
func.func @gemm_typed_gather(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                             %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                             %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>) {tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Scatter list (i64), row scale and atomic accumulation in the epilogue.
// CHECK-LABEL: func.func @gemm_scatter_atomic
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<8x4xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[OROWS:[-a-zA-Z0-9_]+]]: memref<?xi64>, %[[S:[-a-zA-Z0-9_]+]]: memref<?xf32>)
// CHECK: gpu.launch
// CHECK: gpu.barrier
// CHECK: %[[SI:[-a-zA-Z0-9_]+]] = memref.load %[[S]][%[[ROW:[-a-zA-Z0-9_]+]]] : memref<?xf32>
// CHECK: %[[V:[-a-zA-Z0-9_]+]] = arith.mulf %{{.*}}, %[[SI]] : f32
// CHECK: %[[O:[-a-zA-Z0-9_]+]] = memref.load %[[OROWS]][%[[ROW]]] : memref<?xi64>
// CHECK: %[[OI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[O]] : i64 to index
// CHECK: memref.atomic_rmw addf %[[V]], %[[OUT]][%[[OI]], %{{.*}}]
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @gemm_scatter_atomic(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                               %out: memref<?x4xf32>, %orows: memref<?xi64>,
                               %s: memref<?xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>[%orows : memref<?xi64>])
             row_scale(%s : memref<?xf32>) {accumulate, atomic, tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Atomic without accumulate: a first kernel clears the scattered rows of
// the rows inside [seg[0], seg[T]) (one thread per element), the GEMM
// kernel then adds atomically.
// CHECK-LABEL: func.func @gemm_scatter_atomic_overwrite
// CHECK-SAME: %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[OROWS:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[SEG:[-a-zA-Z0-9_]+]]: memref<?xi32>)
// CHECK: %[[ZERO:[-a-zA-Z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: memref.load %[[SEG]]
// CHECK: memref.load %[[SEG]]
// CHECK: %[[O:[-a-zA-Z0-9_]+]] = memref.load %[[OROWS]]
// CHECK: %[[OI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[O]]
// CHECK: memref.store %[[ZERO]], %[[OUT]][%[[OI]], %{{.*}}]
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK-SAME: workgroup
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]]
func.func @gemm_scatter_atomic_overwrite(%lhs: memref<?x8xf32>,
                                         %rhs: memref<?x8x4xf32>,
                                         %out: memref<?x4xf32>,
                                         %orows: memref<?xi32>,
                                         %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<?x8x4xf32>)
             out(%out : memref<?x4xf32>[%orows : memref<?xi32>])
             segments(%seg : memref<?xi32>) {atomic, tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Accumulate without atomics (one producer per row): load, add, store.
// CHECK-LABEL: func.func @gemm_accumulate
// CHECK-SAME: %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK: gpu.launch
// CHECK: %[[OLD:[-a-zA-Z0-9_]+]] = memref.load %[[OUT]][%[[R:[-a-zA-Z0-9_]+]], %[[N:[-a-zA-Z0-9_]+]]]
// CHECK: %[[NEW:[-a-zA-Z0-9_]+]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK: memref.store %[[NEW]], %[[OUT]][%[[R]], %[[N]]]
// CHECK-NOT: memref.atomic_rmw
// CHECK: return
func.func @gemm_accumulate(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                           %out: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>) {accumulate, tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Input gradient: typed transposed weights [T, N, K] are staged as (k, n)
// tiles, each thread reading weight element [t, n, k] (consecutive threads:
// consecutive k, the stored order; indices clamped into the weight, the
// value selected away outside it).
// CHECK-LABEL: func.func @gemm_transpose_rhs
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<?x8x4xf32>,
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[A:[-a-zA-Z0-9_]+]] : memref<8x65xf32, #gpu.address_space<workgroup>>, %[[B:[-a-zA-Z0-9_]+]] : memref<8x9xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[N:[-a-zA-Z0-9_]+]] = arith.divui %{{.*}}, %c8 : index
// CHECK: %[[D:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c8 : index
// CHECK: scf.while
// CHECK: ^bb0(%[[T:[-a-zA-Z0-9_]+]]: index):
// CHECK: %[[DC:[-a-zA-Z0-9_]+]] = arith.minsi %[[D]], %c3 : index
// CHECK: %[[NC:[-a-zA-Z0-9_]+]] = arith.minsi %[[N]], %c7 : index
// CHECK: memref.load %[[RHS]][%[[T]], %[[NC]], %[[DC]]] : memref<?x8x4xf32>
// CHECK: memref.store %{{.*}}, %[[B]][%[[D]], %[[N]]]
func.func @gemm_transpose_rhs(%lhs: memref<?x4xf32>, %rhs: memref<?x8x4xf32>,
                              %out: memref<?x8xf32>, %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x4xf32>) rhs(%rhs : memref<?x8x4xf32>)
             out(%out : memref<?x8xf32>) segments(%seg : memref<?xi32>)
             {accumulate, transpose_rhs, tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Per-head block-diagonal weights [T, H, K/H, N/H]: one GEMM per head on
// grid.z; head h reads lhs columns h * 16 + k and writes out columns
// h * 8 + n; the [M, H] row scale picks head (h * 8 + n) / 8.
// CHECK-LABEL: func.func @gemm_per_head
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<?x4x16x8xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[SEG:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[S:[-a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK-DAG: %[[C4:[-a-zA-Z0-9_]+]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:[-a-zA-Z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:[-a-zA-Z0-9_]+]] = arith.constant 16 : index
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:[-a-zA-Z0-9_]+]]) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[C4]])
// CHECK: %[[KOFF:[-a-zA-Z0-9_]+]] = arith.muli %[[BZ]], %[[C16]] : index
// CHECK: %[[NOFF:[-a-zA-Z0-9_]+]] = arith.muli %[[BZ]], %[[C8]] : index
// CHECK: ^bb0(%[[T:[-a-zA-Z0-9_]+]]: index):
// CHECK: %[[COL:[-a-zA-Z0-9_]+]] = arith.addi %[[KOFF]], %{{.*}} : index
// CHECK: memref.load %[[LHS]][%{{.*}}, %[[COL]]]
// CHECK: memref.load %[[RHS]][%[[T]], %[[BZ]], %{{.*}}, %{{.*}}] : memref<?x4x16x8xf32>
// CHECK: %[[OCOL:[-a-zA-Z0-9_]+]] = arith.addi %[[NOFF]], %{{.*}} : index
// CHECK: %[[SH:[-a-zA-Z0-9_]+]] = arith.divui %[[OCOL]], %[[C8]] : index
// CHECK: memref.load %[[S]][%{{.*}}, %[[SH]]] : memref<?x4xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}, %[[OCOL]]]
func.func @gemm_per_head(%lhs: memref<?x64xf32>, %rhs: memref<?x4x16x8xf32>,
                         %out: memref<?x32xf32>, %seg: memref<?xi32>,
                         %s: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<?x4x16x8xf32>)
             out(%out : memref<?x32xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?x4xf32>) {tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// The vector kernel (16-byte rows, coarsen 4) of a narrow output keeps the
// full tile's area in rows: per-head 16 x 16 blocks stage 256 rows ([256][16
// + 4], B [16][16 + 4]) and a 4-column map 256 rows of its 32-deep k-tiles
// ([256][32 + 4]: 512 rows would pass 48 KiB of shared memory); the grid
// tiles the rows by 256. The general kernel beside them keeps 64-row tiles.
// CHECK-LABEL: func.func @gemm_narrow_tiles
// CHECK-DAG: %[[C256:[-a-zA-Z0-9_]+]] = arith.constant 256 : index
// CHECK: arith.ceildivui %{{.*}}, %[[C256]] : index
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<256x20xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x20xf32, #gpu.address_space<workgroup>>)
// CHECK: } else {
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<32x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x17xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.ceildivui %{{.*}}, %[[C256]] : index
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<256x36xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x8xf32, #gpu.address_space<workgroup>>)
// CHECK: } else {
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x5xf32, #gpu.address_space<workgroup>>)
func.func @gemm_narrow_tiles(%lhs: memref<?x64xf32>, %heads: memref<?x4x16x16xf32>,
                             %out: memref<?x64xf32>, %seg: memref<?xi32>,
                             %map: memref<?x64x4xf32>, %out4: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%heads : memref<?x4x16x16xf32>)
             out(%out : memref<?x64xf32>) segments(%seg : memref<?xi32>)
             {tile = array<i64: 64, 64, 32>, coarsen = 4}
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%map : memref<?x64x4xf32>)
             out(%out4 : memref<?x4xf32>) segments(%seg : memref<?xi32>)
             {tile = array<i64: 64, 64, 32>, coarsen = 4}
  return
}

// -----

// Weight gradient: the weight is cleared by a first kernel; the rows are
// split into chunks over grid.x (chunk = 32 * ceil(ceil(M / 1024) / 32)), a
// block reduces the segment pieces of its chunk 32 rows (4 stages of 8) at a
// time through shared memory (lhs rows gathered, rhs rows gathered and
// scaled) and adds its partial tile to slice t atomically.
// CHECK-LABEL: func.func @gemm_outer_product
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[LR:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[RR:[-a-zA-Z0-9_]+]]: memref<?xi64>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64x32xf32>, %[[SEG:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[S:[-a-zA-Z0-9_]+]]: memref<?xf32>)
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK: %[[M:[-a-zA-Z0-9_]+]] = memref.dim %[[LR]]
// CHECK: %[[PER:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[M]], %c1024 : index
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[A:[-a-zA-Z0-9_]+]] : memref<32x65xf32, #gpu.address_space<workgroup>>, %[[B:[-a-zA-Z0-9_]+]] : memref<32x33xf32, #gpu.address_space<workgroup>>)
// CHECK: ^bb0(%[[T:[-a-zA-Z0-9_]+]]: index):
// CHECK: scf.for %[[R0:[-a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %c32 iter_args
// CHECK: %[[L:[-a-zA-Z0-9_]+]] = memref.load %[[LR]]
// CHECK: %[[LI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[L]]
// CHECK: memref.load %[[LHS]][%[[LI]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[A]]
// CHECK: %[[R:[-a-zA-Z0-9_]+]] = memref.load %[[RR]]
// CHECK: %[[RI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[R]] : i64 to index
// CHECK: %[[Y:[-a-zA-Z0-9_]+]] = memref.load %[[RHS]][%[[RI]], %{{.*}}]
// CHECK: %[[SI:[-a-zA-Z0-9_]+]] = memref.load %[[S]]
// CHECK: arith.mulf %[[Y]], %[[SI]]
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[T]], %{{.*}}, %{{.*}}]
func.func @gemm_outer_product(%lhs: memref<?x64xf32>, %lrows: memref<?xi32>,
                              %rhs: memref<?x32xf32>, %rrows: memref<?xi64>,
                              %out: memref<?x64x32xf32>, %seg: memref<?xi32>,
                              %s: memref<?xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%lrows : memref<?xi32>])
             rhs(%rhs : memref<?x32xf32>[%rrows : memref<?xi64>])
             out(%out : memref<?x64x32xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?xf32>) {transpose_lhs, tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// Per-head weight gradient that accumulates: no clearing kernel; one head
// per grid.z, reading lhs columns h * 4 + k and rhs columns h * 3 + n.
// CHECK-LABEL: func.func @gemm_outer_product_per_head
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<?x6xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<2x4x3xf32>)
// CHECK-NOT: gpu.terminator
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:[-a-zA-Z0-9_]+]]) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %c2)
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[BZ]], %{{.*}}, %{{.*}}]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
func.func @gemm_outer_product_per_head(%lhs: memref<?x8xf32>,
                                       %rhs: memref<?x6xf32>,
                                       %out: memref<2x4x3xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<?x6xf32>)
             out(%out : memref<2x4x3xf32>) {accumulate, transpose_lhs, tile = array<i64: 64, 64, 8>, coarsen = 1}
  return
}

// -----

// The schedule knobs: tile [32, 64, 16], coarsen 4 and 128 threads give a
// 16 x 8 thread grid with 4 x 4 outputs per thread; 128 columns need two
// column tiles (grid.y); two k-tiles of 16 are staged per barrier (at most
// 32 staged elements per thread).
// CHECK-LABEL: func.func @gemm_knobs
// CHECK: %[[TILES:[-a-zA-Z0-9_]+]] = arith.ceildivui %{{.*}}, %c32 : index
// CHECK: %[[GX:[-a-zA-Z0-9_]+]] = arith.maxsi %[[TILES]], %c1 : index
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %c2, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1) workgroup(%{{.*}} : memref<32x33xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x65xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
func.func @gemm_knobs(%lhs: memref<?x64xf32>, %rhs: memref<64x128xf32>,
                      %out: memref<?x128xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<64x128xf32>)
             out(%out : memref<?x128xf32>)
             {tile = array<i64: 32, 64, 16>, coarsen = 4, launch_bounds = 128}
  return
}

// -----

// Edge traversal with a feature loop (RGCN aggregation), warp mapping: warp
// w walks edges [32 w, 32 w + 32); its lanes split the feature loop
// (f = lane, lane + 32); the per-edge scalar is loaded by every lane; the
// accumulation into the destination row goes to the warp's row of a
// shared buffer (8 warps x 64), flushed with one global atomic per element
// when the destination changes and after the last edge. Each lane owns the
// elements of its iterations, so the buffer is updated without atomics,
// with a warp barrier after the loop.
// CHECK-LABEL: func.func @aggregate
// CHECK-SAME: (%[[SRC:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[DST:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[ETY:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[NORM:[-a-zA-Z0-9_]+]]: memref<?xf32>, %[[Z:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>)
// CHECK-DAG: %[[ZERO:[-a-zA-Z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[MASK:[-a-zA-Z0-9_]+]] = arith.constant -1 : i32
// CHECK-DAG: %[[NOROW:[-a-zA-Z0-9_]+]] = arith.constant -1 : index
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.dim %[[DST]]
// CHECK: %[[G:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[E]], %c256 : index
// CHECK: gpu.launch {{.*}} threads(%[[TX:[-a-zA-Z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<512xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %[[TX]], %c32 : index
// CHECK: %[[WARP:[-a-zA-Z0-9_]+]] = arith.divui %[[TX]], %c32 : index
// CHECK: %[[BEGIN:[-a-zA-Z0-9_]+]] = arith.muli %{{.*}}, %c32 : index
// CHECK: %[[END:[-a-zA-Z0-9_]+]] = arith.minsi %{{.*}}, %[[E]] : index
// CHECK: %[[BASE:[-a-zA-Z0-9_]+]] = arith.muli %[[WARP]], %c64 : index
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c64 step %c32 {
// CHECK: memref.store %[[ZERO]], %[[BUF]]
// CHECK: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK: %[[LAST:[-a-zA-Z0-9_]+]] = scf.for %[[EDGE:[-a-zA-Z0-9_]+]] = %[[BEGIN]] to %[[END]] step %c1 iter_args(%[[CUR:[-a-zA-Z0-9_]+]] = %[[NOROW]]) -> (index) {
// CHECK: %[[D:[-a-zA-Z0-9_]+]] = memref.load %[[DST]][%[[EDGE]]]
// CHECK: %[[DI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[D]]
// CHECK: %[[MOVED:[-a-zA-Z0-9_]+]] = arith.cmpi ne, %[[DI]], %[[CUR]] : index
// CHECK: scf.if
// CHECK: nvvm.bar.warp.sync
// CHECK: scf.for %[[C:[-a-zA-Z0-9_]+]] = %[[LANE]] to %c64 step %c32 {
// CHECK: %[[AT:[-a-zA-Z0-9_]+]] = arith.addi %[[BASE]], %[[C]] : index
// CHECK: %[[V:[-a-zA-Z0-9_]+]] = memref.load %[[BUF]][%[[AT]]]
// CHECK: memref.store %[[ZERO]], %[[BUF]][%[[AT]]]
// CHECK: %[[TOUCHED:[-a-zA-Z0-9_]+]] = arith.cmpf une, %[[V]], %[[ZERO]] : f32
// CHECK: scf.if %[[TOUCHED]] {
// CHECK: memref.atomic_rmw addf %[[V]], %[[OUT]][%[[CUR]], %{{.*}}]
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[N:[-a-zA-Z0-9_]+]] = memref.load %[[NORM]][%[[EDGE]]]
// Two features per lane: the split loop is unrolled (features LANE and
// LANE + 32), its float math contracting.
// CHECK-NOT: scf.for
// CHECK: %[[X:[-a-zA-Z0-9_]+]] = memref.load %[[Z]][%[[EDGE]], %[[LANE]]]
// CHECK: %[[P:[-a-zA-Z0-9_]+]] = arith.mulf %[[N]], %[[X]] fastmath<contract> : f32
// CHECK: %[[SLOT:[-a-zA-Z0-9_]+]] = arith.addi %[[BASE]], %[[LANE]] : index
// CHECK: %[[OLD:[-a-zA-Z0-9_]+]] = memref.load %[[BUF]][%[[SLOT]]]
// CHECK: %[[NEW:[-a-zA-Z0-9_]+]] = arith.addf %[[OLD]], %[[P]] : f32
// CHECK: memref.store %[[NEW]], %[[BUF]][%[[SLOT]]]
// CHECK: %[[F1:[-a-zA-Z0-9_]+]] = arith.addi %[[LANE]], %c32 : index
// CHECK: memref.load %[[Z]][%[[EDGE]], %[[F1]]]
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK-NEXT: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK-NEXT: scf.yield %[[DI]] : index
// CHECK: %[[HAS:[-a-zA-Z0-9_]+]] = arith.cmpi sge, %[[LAST]], %c0 : index
// CHECK: scf.if %[[HAS]] {
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[LAST]], %{{.*}}]
func.func @aggregate(%src: memref<?xi32>, %dst: memref<?xi32>,
                     %ety: memref<?xi32>, %norm: memref<?xf32>,
                     %z: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%norm : memref<?xf32> as edge, %z : memref<?x64xf32> as edge)
      outs(%out : memref<?x64xf32> as dst) {
  ^bb0(%e: index, %rn: index, %rz: index, %ro: index):
    %n = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      %p = arith.mulf %n, %v : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

// -----

// Dot products (RGAT score): the reduction over features becomes per-lane
// partials and a butterfly all-reduce (xor 16, 8, 4, 2, 1), then the init
// value; the per-edge store and the max into the destination are issued by
// lane 0 (the max into a one-element shared row per warp, -inf initially,
// flushed by a relaxed device-scope atomic max: memref.atomic_rmw maximumf
// would become an acquire-release compare-and-swap at system scope).
// CHECK-LABEL: func.func @score
// CHECK-SAME: %[[S:[-a-zA-Z0-9_]+]]: memref<?x1xf32>, %[[MAX:[-a-zA-Z0-9_]+]]: memref<?x1xf32>)
// CHECK-DAG: %[[NEGINF:[-a-zA-Z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:[-a-zA-Z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: gpu.launch {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: %[[LANE0:[-a-zA-Z0-9_]+]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK: memref.store %[[NEGINF]], %[[BUF]]
// CHECK: scf.for %[[EDGE:[-a-zA-Z0-9_]+]] =
// CHECK: %[[X0:[-a-zA-Z0-9_]+]] = memref.load %{{.*}}[%{{.*}}, %[[LANE]]]
// CHECK: %[[M0:[-a-zA-Z0-9_]+]] = arith.mulf %[[X0]], %{{.*}} fastmath<contract> : f32
// CHECK: %[[A0:[-a-zA-Z0-9_]+]] = arith.addf %[[M0]], %[[ZERO]] fastmath<contract> : f32
// CHECK: %[[F1:[-a-zA-Z0-9_]+]] = arith.addi %[[LANE]], %c32 : index
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[F1]]]
// CHECK: %[[PART:[-a-zA-Z0-9_]+]] = arith.addf %[[A0]], %{{.*}} fastmath<contract> : f32
// CHECK: %[[S16:[-a-zA-Z0-9_]+]] = nvvm.shfl.sync bfly %[[ALL:[-a-zA-Z0-9_]+]], %[[PART]], %c16_i32, %c31_i32 : f32 -> f32
// CHECK: %[[R16:[-a-zA-Z0-9_]+]] = arith.addf %[[PART]], %[[S16]] fastmath<contract> : f32
// CHECK: nvvm.shfl.sync bfly %[[ALL]], %[[R16]], %c8_i32, %c31_i32 : f32 -> f32
// CHECK: nvvm.shfl.sync bfly %[[ALL]], %{{.*}}, %c4_i32, %c31_i32 : f32 -> f32
// CHECK: nvvm.shfl.sync bfly %[[ALL]], %{{.*}}, %c2_i32, %c31_i32 : f32 -> f32
// CHECK: %[[S1:[-a-zA-Z0-9_]+]] = nvvm.shfl.sync bfly %[[ALL]], %[[R2:[-a-zA-Z0-9_]+]], %c1_i32, %c31_i32 : f32 -> f32
// CHECK: %[[R1:[-a-zA-Z0-9_]+]] = arith.addf %[[R2]], %[[S1]] fastmath<contract> : f32
// CHECK: %[[DOT:[-a-zA-Z0-9_]+]] = arith.addf %[[R1]], %[[ZERO]] fastmath<contract> : f32
// CHECK: scf.if %[[LANE0]] {
// CHECK: memref.store %[[DOT]], %[[S]][%[[EDGE]], %c0]
// CHECK: %[[OLD:[-a-zA-Z0-9_]+]] = memref.load %[[BUF]]
// CHECK: %[[NEW:[-a-zA-Z0-9_]+]] = arith.maximumf %[[OLD]], %[[DOT]] : f32
// CHECK: memref.store %[[NEW]], %[[BUF]]
// CHECK: }
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK: %[[PTR:[-a-zA-Z0-9_]+]] = memref.extract_aligned_pointer_as_index %[[MAX]]
// CHECK: llvm.inttoptr
// CHECK: llvm.atomicrmw fmaximum %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr, f32
func.func @score(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                 %z: memref<?x64xf32>, %a: memref<?x64xf32>,
                 %s: memref<?x1xf32>, %m: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge, %a : memref<?x64xf32> as etype)
      outs(%s : memref<?x1xf32> as edge, %m : memref<?x1xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ra: index, %rs: index, %rm: index):
    %d = scf.for %f = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %z[%rz, %f] : memref<?x64xf32>
      %y = memref.load %a[%ra, %f] : memref<?x64xf32>
      %p = arith.mulf %x, %y : f32
      %q = arith.addf %acc, %p : f32
      scf.yield %q : f32
    }
    memref.store %d, %s[%rs, %c0] : memref<?x1xf32>
    htmpl.accumulate max %d, %m[%rm, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// A scalar body (no feature loop): one edge per thread. The accumulation
// into the destination row is moved after the body: lanes with equal
// destinations are combined by a segmented scan over shuffles (run starts by
// a max-scan, then the values), and the last lane of each run issues the one
// atomic. Lanes past the last edge carry row -1 and the identity.
// CHECK-LABEL: func.func @expsum
// CHECK-SAME: %[[SUM:[-a-zA-Z0-9_]+]]: memref<?x1xf32>)
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: %[[ID:[-a-zA-Z0-9_]+]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[VALID:[-a-zA-Z0-9_]+]] = arith.cmpi slt, %[[ID]], %{{.*}} : index
// CHECK: %[[R:[-a-zA-Z0-9_]+]]:2 = scf.if %[[VALID]] -> (f32, index) {
// CHECK: %[[EXP:[-a-zA-Z0-9_]+]] = math.exp
// CHECK: scf.yield %[[EXP]], %{{.*}} : f32, index
// CHECK: } else {
// CHECK: scf.yield %{{.*}}, %c-1 : f32, index
// CHECK: %[[KEY:[-a-zA-Z0-9_]+]] = arith.index_cast %[[R]]#1 : index to i32
// CHECK: gpu.shuffle up %[[KEY]], %c1_i32, %c32_i32 : i32
// CHECK-COUNT-5: gpu.shuffle up %{{.*}} : i32
// CHECK-COUNT-5: gpu.shuffle up %{{.*}} : f32
// CHECK: gpu.shuffle down %[[KEY]], %c1_i32, %c32_i32 : i32
// CHECK: scf.if
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[SUM]][%[[R]]#1, %c0]
func.func @expsum(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                  %s: memref<?x1xf32>, %m: memref<?x1xf32>,
                  %sum: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x1xf32> as edge, %m : memref<?x1xf32> as dst)
      outs(%sum : memref<?x1xf32> as dst) {
  ^bb0(%e: index, %rs: index, %rm: index, %ro: index):
    %x = memref.load %s[%rs, %c0] : memref<?x1xf32>
    %y = memref.load %m[%rm, %c0] : memref<?x1xf32>
    %d = arith.subf %x, %y : f32
    %v = math.exp %d : f32
    htmpl.accumulate add %v, %sum[%ro, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// Integer accumulation (in-degrees), thread mapping with 64 threads: the
// segmented reduction uses addi.
// CHECK-LABEL: func.func @integer
// CHECK-SAME: %[[DEG:[-a-zA-Z0-9_]+]]: memref<?xi32>)
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c64,
// CHECK: gpu.shuffle up
// CHECK: arith.addi %{{.*}}, %{{.*}} : i32
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[DEG]]
func.func @integer(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                   %deg: memref<?xi32>) {
  %one = arith.constant 1 : i32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%deg : memref<?xi32> as dst) launch_bounds(64) {
  ^bb0(%e: index, %rd: index):
    htmpl.accumulate add %one, %deg[%rd] : i32, memref<?xi32>
  }
  return
}

// -----

// CSR order: warp w walks slots [32 w, 32 w + 32); the destination node of
// its first slot is a binary search over row_ptr, then advanced while
// row_ptr[t + 1] <= slot. Edge id = eid[slot], compact row =
// compact_map[eid[slot]], etype = csr_etype[slot], src = csr_src[slot].
// Accumulations into src rows stay global atomics.
// CHECK-LABEL: func.func @csr
// CHECK-SAME: (%[[RP:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[CSRC:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[EID:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[CETY:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[Z:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[A:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[SUM:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[BACK:[-a-zA-Z0-9_]+]]: memref<?x8xf32>)
// CHECK: %[[SLOTS:[-a-zA-Z0-9_]+]] = memref.dim %[[CSRC]]
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128, {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[FIRST:[-a-zA-Z0-9_]+]]:2 = scf.while
// CHECK: memref.load %[[RP]]
// CHECK: scf.for %[[SLOT:[-a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %c1 iter_args(%[[CUR:[-a-zA-Z0-9_]+]] = %c-1, %[[TPREV:[-a-zA-Z0-9_]+]] = %[[FIRST]]#0) -> (index, index)
// CHECK: %[[T:[-a-zA-Z0-9_]+]] = scf.while (%[[TI:[-a-zA-Z0-9_]+]] = %[[TPREV]]) : (index) -> index
// CHECK: memref.load %[[RP]]
// CHECK: arith.cmpi sle, %{{.*}}, %[[SLOT]] : index
// CHECK: arith.cmpi ne, %[[T]], %[[CUR]] : index
// CHECK: %[[ID:[-a-zA-Z0-9_]+]] = memref.load %[[EID]][%[[SLOT]]]
// CHECK: %[[IDI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[ID]]
// CHECK: %[[PR:[-a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[IDI]]]
// CHECK: %[[PRI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[PR]]
// CHECK: %[[TY:[-a-zA-Z0-9_]+]] = memref.load %[[CETY]][%[[SLOT]]]
// CHECK: %[[TYI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[TY]]
// CHECK: %[[SR:[-a-zA-Z0-9_]+]] = memref.load %[[CSRC]][%[[SLOT]]]
// CHECK: %[[SRI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[SR]]
// CHECK: scf.for %[[F:[-a-zA-Z0-9_]+]] =
// CHECK: memref.load %[[Z]][%[[PRI]], %[[F]]]
// CHECK: memref.load %[[A]][%[[TYI]], %[[F]]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[BACK]][%[[SRI]], %[[F]]]
// CHECK: scf.yield %[[T]], %[[T]] : index, index
func.func @csr(%rp: memref<?xi32>, %csrc: memref<?xi32>, %eid: memref<?xi32>,
               %cety: memref<?xi32>, %map: memref<?xi32>, %z: memref<?x8xf32>,
               %a: memref<?x8xf32>, %sum: memref<?x8xf32>,
               %back: memref<?x8xf32>) {
  htmpl.traversal edges csr(%rp, %csrc, %eid, %cety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%z : memref<?x8xf32> as compact, %a : memref<?x8xf32> as etype)
      outs(%sum : memref<?x8xf32> as dst, %back : memref<?x8xf32> as src)
      launch_bounds(128) {
  ^bb0(%e: index, %rz: index, %ra: index, %rs: index, %rb: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    scf.for %f = %c0 to %c8 step %c1 {
      %zv = memref.load %z[%rz, %f] : memref<?x8xf32>
      %av = memref.load %a[%ra, %f] : memref<?x8xf32>
      %p = arith.mulf %zv, %av : f32
      htmpl.accumulate add %p, %sum[%rs, %f] : f32, memref<?x8xf32>
      htmpl.accumulate add %p, %back[%rb, %f] : f32, memref<?x8xf32>
    }
  }
  return
}

// -----

// Every iteration of the feature loop adds into one element of the
// destination row: lanes share it, so the shared row is updated atomically.
// CHECK-LABEL: func.func @sum_features
// CHECK-SAME: %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x2xf32>)
// CHECK: gpu.launch {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[BUF]][%{{.*}}] : (f32, memref<16xf32, #gpu.address_space<workgroup>>) -> f32
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[BUF]][%{{.*}}] : (f32, memref<16xf32, #gpu.address_space<workgroup>>) -> f32
// CHECK-NOT: nvvm.bar.warp.sync
// CHECK: scf.yield
func.func @sum_features(%src: memref<?xi32>, %dst: memref<?xi32>,
                        %ety: memref<?xi32>, %z: memref<?x64xf32>,
                        %out: memref<?x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge) outs(%out : memref<?x2xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      htmpl.accumulate add %v, %out[%ro, %c1] : f32, memref<?x2xf32>
    }
  }
  return
}

// -----

// Heads: the 4-iteration head loop is unrolled (a short loop would keep
// most lanes idle); every lane computes each head's scalar, the lanes split
// each head's 16-feature loop.
// CHECK-LABEL: func.func @heads
// CHECK-SAME: %[[ALPHA:[-a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[Z:[-a-zA-Z0-9_]+]]: memref<?x64xf32>
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: scf.for %[[E:[-a-zA-Z0-9_]+]] =
// CHECK-NOT: %c4
// CHECK: memref.load %[[ALPHA]][%[[E]], %c0]
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c16 step %c32 {
// CHECK: memref.load %[[ALPHA]][%[[E]], %c1]
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c16 step %c32 {
// CHECK: memref.load %[[ALPHA]][%[[E]], %c2]
// CHECK: memref.load %[[ALPHA]][%[[E]], %c3]
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c16 step %c32 {
func.func @heads(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                 %alpha: memref<?x4xf32>, %z: memref<?x64xf32>,
                 %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%alpha : memref<?x4xf32> as edge, %z : memref<?x64xf32> as edge)
      outs(%out : memref<?x64xf32> as dst) {
  ^bb0(%e: index, %ra: index, %rz: index, %ro: index):
    scf.for %h = %c0 to %c4 step %c1 {
      %s = memref.load %alpha[%ra, %h] : memref<?x4xf32>
      %x = math.exp %s : f32
      %base = arith.muli %h, %c16 : index
      scf.for %f = %c0 to %c16 step %c1 {
        %col = arith.addi %base, %f : index
        %v = memref.load %z[%rz, %col] : memref<?x64xf32>
        %p = arith.mulf %x, %v : f32
        htmpl.accumulate add %p, %out[%ro, %col] : f32, memref<?x64xf32>
      }
    }
  }
  return
}

// -----

// Every edge scheme in the warp mapping: compact_map[e] (i64), etype[e],
// src[e], whole (no row), and a store per lane inside the feature loop.
// CHECK-LABEL: func.func @schemes
// CHECK-SAME: (%[[SRC:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[DST:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[ETY:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[-a-zA-Z0-9_]+]]: memref<?xi64>, %[[Z:[-a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[A:[-a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[X:[-a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[B:[-a-zA-Z0-9_]+]]: memref<32xf32>, %[[O:[-a-zA-Z0-9_]+]]: memref<?x32xf32>)
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: scf.for %[[E:[-a-zA-Z0-9_]+]] =
// CHECK: %[[PR:[-a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[E]]] : memref<?xi64>
// CHECK: %[[PRI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[PR]] : i64 to index
// CHECK: %[[TR:[-a-zA-Z0-9_]+]] = memref.load %[[ETY]][%[[E]]]
// CHECK: %[[TRI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[TR]]
// CHECK: %[[SR:[-a-zA-Z0-9_]+]] = memref.load %[[SRC]][%[[E]]]
// CHECK: %[[SRI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[SR]]
// CHECK: memref.load %[[Z]][%[[PRI]], %[[F:[-a-zA-Z0-9_]+]]]
// CHECK: memref.load %[[A]][%[[TRI]], %[[F]]]
// CHECK: memref.load %[[X]][%[[SRI]], %[[F]]]
// CHECK: memref.load %[[B]][%[[F]]]
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %[[O]][%[[E]], %[[F]]]
func.func @schemes(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                   %map: memref<?xi64>, %z: memref<?x32xf32>,
                   %a: memref<?x32xf32>, %x: memref<?x32xf32>,
                   %b: memref<32xf32>, %o: memref<?x32xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi64>)
      ins(%z : memref<?x32xf32> as compact, %a : memref<?x32xf32> as etype,
          %x : memref<?x32xf32> as src, %b : memref<32xf32> as whole)
      outs(%o : memref<?x32xf32> as edge) {
  ^bb0(%e: index, %rz: index, %ra: index, %rx: index, %rb: index, %ro: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    scf.for %f = %c0 to %c32 step %c1 {
      %zv = memref.load %z[%rz, %f] : memref<?x32xf32>
      %av = memref.load %a[%ra, %f] : memref<?x32xf32>
      %xv = memref.load %x[%rx, %f] : memref<?x32xf32>
      %bv = memref.load %b[%f] : memref<32xf32>
      %p = arith.mulf %zv, %av : f32
      %q = arith.addf %p, %xv : f32
      %r = arith.addf %q, %bv : f32
      memref.store %r, %o[%ro, %f] : memref<?x32xf32>
    }
  }
  return
}

// -----

// Node traversal with a feature loop, in place (the mean's division reads
// and writes the same element of each row, in one iteration): one warp per
// node, lanes over features.
// CHECK-LABEL: func.func @mean
// CHECK-SAME: (%[[RP:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[M:[-a-zA-Z0-9_]+]]: memref<?x64xf32>)
// CHECK: %[[N:[-a-zA-Z0-9_]+]] = memref.dim %[[M]]
// CHECK: %[[G:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[N]], %c8 : index
// CHECK: gpu.launch
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: %[[NODE:[-a-zA-Z0-9_]+]] = arith.addi
// CHECK: %[[IN:[-a-zA-Z0-9_]+]] = arith.cmpi slt, %[[NODE]], %[[N]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: memref.load %[[RP]][%[[NODE]]]
// CHECK: memref.load %[[M]][%[[NODE]], %[[LANE]]]
// CHECK: memref.store %{{.*}}, %[[M]][%[[NODE]], %[[LANE]]]
// CHECK: %[[F1:[-a-zA-Z0-9_]+]] = arith.addi %[[LANE]], %c32 : index
// CHECK: memref.load %[[M]][%[[NODE]], %[[F1]]]
// CHECK: memref.store %{{.*}}, %[[M]][%[[NODE]], %[[F1]]]
func.func @mean(%rp: memref<?xi32>, %m: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1_i32 = arith.constant 1 : i32
  htmpl.traversal nodes ins(%rp : memref<?xi32> as whole, %m : memref<?x64xf32> as node)
      outs(%m : memref<?x64xf32> as node) {
  ^bb0(%n: index, %rw: index, %r1: index, %r2: index):
    %n1 = arith.addi %n, %c1 : index
    %a = memref.load %rp[%n] : memref<?xi32>
    %b = memref.load %rp[%n1] : memref<?xi32>
    %d = arith.subi %b, %a : i32
    %d1 = arith.maxsi %d, %c1_i32 : i32
    %df = arith.sitofp %d1 : i32 to f32
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %m[%r1, %f] : memref<?x64xf32>
      %q = arith.divf %v, %df : f32
      memref.store %q, %m[%r2, %f] : memref<?x64xf32>
    }
  }
  return
}

// -----

// Node traversal without a feature loop: one node per thread; ntype rows
// are node_types[n].
// CHECK-LABEL: func.func @ntype
// CHECK-SAME: (%[[NT:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[W:[-a-zA-Z0-9_]+]]: memref<?xf32>, %[[O:[-a-zA-Z0-9_]+]]: memref<?xf32>)
// CHECK: %[[N:[-a-zA-Z0-9_]+]] = memref.dim %[[NT]]
// CHECK: %[[G:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[N]], %c256 : index
// CHECK: gpu.launch
// CHECK: %[[ID:[-a-zA-Z0-9_]+]] = arith.addi
// CHECK: scf.if
// CHECK: %[[T:[-a-zA-Z0-9_]+]] = memref.load %[[NT]][%[[ID]]]
// CHECK: %[[TI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[T]]
// CHECK: %[[V:[-a-zA-Z0-9_]+]] = memref.load %[[W]][%[[TI]]]
// CHECK: memref.store %[[V]], %[[O]][%[[ID]]]
func.func @ntype(%nt: memref<?xi32>, %w: memref<?xf32>, %o: memref<?xf32>) {
  htmpl.traversal nodes node_types(%nt : memref<?xi32>)
      ins(%w : memref<?xf32> as ntype) outs(%o : memref<?xf32> as node) {
  ^bb0(%n: index, %rw: index, %ro: index):
    %v = memref.load %w[%rw] : memref<?xf32>
    memref.store %v, %o[%ro] : memref<?xf32>
  }
  return
}

// -----

// A body whose code outside the feature loops reads what the feature loop
// wrote cannot be split over lanes: one edge per thread, body unchanged,
// accumulations as global atomics.
// CHECK-LABEL: func.func @unsafe
// CHECK-SAME: %[[T:[-a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x8xf32>)
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 {
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: memref.load %[[T]]
// CHECK: scf.for %[[F:[-a-zA-Z0-9_]+]] = %c0 to %c8 step %c1 {
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%{{.*}}, %[[F]]]
// CHECK-NOT: gpu.shuffle
// CHECK: return
func.func @unsafe(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                  %t: memref<?x8xf32>, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%t : memref<?x8xf32> as edge, %out : memref<?x8xf32> as dst) {
  ^bb0(%e: index, %rt: index, %ro: index):
    scf.for %f = %c0 to %c8 step %c1 {
      memref.store %one, %t[%rt, %f] : memref<?x8xf32>
    }
    %x = memref.load %t[%rt, %c0] : memref<?x8xf32>
    scf.for %f = %c0 to %c8 step %c1 {
      htmpl.accumulate add %x, %out[%ro, %f] : f32, memref<?x8xf32>
    }
  }
  return
}

// -----

// Stores to one buffer from warp-uniform code (lane 0) and from a
// distributed loop (other lanes) could land in either order: one edge per
// thread instead, which keeps the body's order.
// CHECK-LABEL: func.func @store_sites
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: %[[ID:[-a-zA-Z0-9_]+]] = arith.addi
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ID]], %c0]
// CHECK: scf.for %[[F:[-a-zA-Z0-9_]+]] = %c0 to %c8 step %c1 {
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ID]], %[[F]]]
func.func @store_sites(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                       %x: memref<?x8xf32>, %o: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x8xf32> as edge) outs(%o : memref<?x8xf32> as edge) {
  ^bb0(%e: index, %rx: index, %ro: index):
    memref.store %one, %o[%ro, %c0] : memref<?x8xf32>
    scf.for %f = %c0 to %c8 step %c1 {
      %v = memref.load %x[%rx, %f] : memref<?x8xf32>
      memref.store %v, %o[%ro, %f] : memref<?x8xf32>
    }
  }
  return
}

// -----

// A per-head scalar body (2 heads): the head loop is unrolled, nothing is
// left for lanes to split, so one edge per thread; both accumulations are
// now at the top level and reduced across the warp (one scan of the run
// starts, one segmented scan per head).
// CHECK-LABEL: func.func @expsum_heads
// CHECK-SAME: %[[SUM:[-a-zA-Z0-9_]+]]: memref<?x2xf32>)
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: %[[R:[-a-zA-Z0-9_]+]]:3 = scf.if %{{.*}} -> (f32, f32, index) {
// CHECK-COUNT-2: math.exp
// CHECK: } else {
// CHECK-COUNT-5: gpu.shuffle up %{{.*}} : i32
// CHECK-COUNT-10: gpu.shuffle up %{{.*}} : f32
// CHECK: scf.if
// CHECK-NEXT: memref.atomic_rmw addf %{{.*}}, %[[SUM]][%[[R]]#2, %{{.*}}]
// CHECK-NEXT: memref.atomic_rmw addf %{{.*}}, %[[SUM]][%[[R]]#2, %{{.*}}]
func.func @expsum_heads(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                        %s: memref<?x2xf32>, %sum: memref<?x2xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x2xf32> as edge) outs(%sum : memref<?x2xf32> as dst) {
  ^bb0(%e: index, %rs: index, %ro: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %h = %c0 to %c2 step %c1 {
      %x = memref.load %s[%rs, %h] : memref<?x2xf32>
      %v = math.exp %x : f32
      htmpl.accumulate add %v, %sum[%ro, %h] : f32, memref<?x2xf32>
    }
  }
  return
}
