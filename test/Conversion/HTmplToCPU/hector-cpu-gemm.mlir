// hector-cpu-gemm: htmpl.gemm as vector loops for the CPU. Row mode carries
// vector accumulators over output columns (tiles of at most 256 bytes) through
// the k loop; transposed weights take a vector dot product per column;
// outer products sum chunks of rows into private buffers added to the
// weight slices plainly (a whole segment) or atomically. Weights with
// dynamic sizes are left to htmpl-to-loops.

// RUN: hector-opt %s --hector-cpu-gemm --split-input-file | FileCheck %s

// 80 columns: a 64-wide and a 16-wide tile; the row's type by binary search.
// CHECK-LABEL: func.func @typed_gather(
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: scf.if
// CHECK: %[[T:.*]]:2 = scf.while
// CHECK: %[[LR:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xi32>
// CHECK-NEXT: %[[L:.*]] = arith.index_cast %[[LR]]
// CHECK: %[[ACC:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args({{.*}}) -> (vector<64xf32>)
// CHECK: %[[X:.*]] = memref.load %{{.*}}[%[[L]], %[[K]]]
// CHECK: vector.broadcast %[[X]] : f32 to vector<64xf32>
// CHECK: vector.load %{{.*}}[%[[T]]#0, %[[K]], %{{.*}}] : memref<?x8x80xf32>, vector<64xf32>
// CHECK: arith.mulf {{.*}} fastmath<contract> : vector<64xf32>
// CHECK: arith.addf {{.*}} fastmath<contract> : vector<64xf32>
// CHECK: vector.store %[[ACC]], %{{.*}}[%[[I]], %{{.*}}] : memref<?x80xf32>, vector<64xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>)
// CHECK: vector.store {{.*}} : memref<?x80xf32>, vector<16xf32>
// CHECK-NOT: htmpl.gemm
func.func @typed_gather(%h: memref<?x8xf32>, %src: memref<?xi32>, %w: memref<?x8x80xf32>,
                        %seg: memref<?xi32>, %out: memref<?x80xf32>) {
  htmpl.gemm lhs(%h : memref<?x8xf32>[%src : memref<?xi32>]) rhs(%w : memref<?x8x80xf32>)
             out(%out : memref<?x80xf32>) segments(%seg : memref<?xi32>)
  return
}

// -----

// Scatter with atomics and no accumulate: the scattered rows are cleared
// first; then one part of the output rows per thread walks all rows and
// adds, without atomics, those that write its rows. Transposed slices give
// one vector dot product per column.
// CHECK-LABEL: func.func @transposed_atomic(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x4xf32>, %[[ROWS:[^:]*]]: memref<?xi32>
// CHECK: scf.parallel
// CHECK: vector.store %{{.*}} : memref<?x4xf32>, vector<4xf32>
// CHECK: %[[T:.*]] = call @hector_cpu_num_threads() : () -> i32
// CHECK: %[[TI:.*]] = arith.index_cast %[[T]]
// CHECK: %[[PARTS:.*]] = arith.maxsi %[[TI]]
// CHECK: scf.parallel (%[[P:.*]]) = (%{{.*}}) to (%[[PARTS]])
// CHECK: scf.for %[[I:.*]] =
// CHECK: memref.load %[[ROWS]][%[[I]]]
// CHECK: scf.if
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : vector<8xf32>
// CHECK: %[[DOT:.*]] = vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<8xf32> into f32
// CHECK: %[[OLD:.*]] = memref.load %[[OUT]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[DOT]]
// CHECK: memref.store %[[NEW]], %[[OUT]]
// CHECK-NOT: atomic_rmw
// CHECK: func.func private @hector_cpu_num_threads() -> i32
func.func @transposed_atomic(%h: memref<?x8xf32>, %w: memref<4x8xf32>, %out: memref<?x4xf32>,
                             %rows: memref<?xi32>) {
  htmpl.gemm lhs(%h : memref<?x8xf32>) rhs(%w : memref<4x8xf32>)
             out(%out : memref<?x4xf32>[%rows : memref<?xi32>]) {transpose_rhs, atomic}
  return
}

// -----

// Per-head blocks with a [rows, 4] row scale over 2 heads of 6 columns: the
// tiles stop at the scale blocks (3 columns), each scaled by its own head.
// CHECK-LABEL: func.func @heads_scale(
// CHECK-COUNT-4: vector.store {{.*}} vector<3xf32>
func.func @heads_scale(%h: memref<?x8xf32>, %w: memref<2x4x6xf32>, %s: memref<?x4xf32>,
                       %out: memref<?x12xf32>) {
  htmpl.gemm lhs(%h : memref<?x8xf32>) rhs(%w : memref<2x4x6xf32>) out(%out : memref<?x12xf32>)
             row_scale(%s : memref<?x4xf32>)
  return
}

// -----

// Outer product: the slices are cleared, chunks of 512 rows walk the
// segments they overlap and sum into a heap buffer, which is added plainly
// when the chunk holds the whole segment, else atomically.
// CHECK-LABEL: func.func @outer(
// CHECK: scf.parallel
// CHECK: vector.store {{.*}} : memref<?x8x4xf32>, vector<4xf32>
// CHECK: arith.ceildivui %{{.*}}, %c512
// CHECK: scf.parallel
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<1x8x4xf32>
// CHECK: scf.while
// CHECK: scf.if
// CHECK: vector.load %[[BUF]]
// CHECK: arith.addf {{.*}} fastmath<contract> : vector<4xf32>
// CHECK: vector.store {{.*}}, %[[BUF]]
// CHECK: scf.if
// CHECK: vector.store {{.*}} : memref<?x8x4xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: scf.for
// CHECK: memref.load %[[BUF]]
// CHECK: memref.atomic_rmw addf
// CHECK: memref.dealloc %[[BUF]]
func.func @outer(%x: memref<?x8xf32>, %g: memref<?x4xf32>, %seg: memref<?xi32>,
                 %dw: memref<?x8x4xf32>) {
  htmpl.gemm lhs(%x : memref<?x8xf32>) rhs(%g : memref<?x4xf32>) out(%dw : memref<?x8x4xf32>)
             segments(%seg : memref<?xi32>) {transpose_lhs}
  return
}

// -----

// CHECK-LABEL: func.func @dynamic(
// CHECK: htmpl.gemm
func.func @dynamic(%h: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
  htmpl.gemm lhs(%h : memref<?x?xf32>) rhs(%w : memref<?x?xf32>) out(%out : memref<?x?xf32>)
  return
}
