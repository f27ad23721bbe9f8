// RUN: hector-opt %s --split-input-file --htmpl-to-gpu --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=PTX

// htmpl.softmax_aggregate: one warp per destination. The host picks the
// 16-byte kernel (4 features per lane, 128-bit loads and stores) when
// values and out start 16-byte aligned, else the scalar one. In the chunk
// loop (32 slots of the CSR row, one per lane) the warp reduces each
// head's maximum and sum with xor shuffles; in the edge loop each lane
// group gets its edge's value row and weight with index shuffles. No
// atomics, no fill.

// CHECK-LABEL: func.func @rgat_heads4
// The loop over chunks carries per head m and l, the lane's accumulator(s),
// and the next chunk's value row and scores (loaded one chunk ahead; the
// first chunk's before the loop, unless the row is empty). The edge loop
// takes 16 edges per step (8 per lane group): 8 rows loaded, then summed.
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: scf.if {{.*}} -> (i32, f32, f32, f32, f32)
// CHECK: scf.for {{.*}} step %c32 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, vector<4xf32>, i32, f32, f32, f32, f32)
// CHECK: gpu.shuffle  xor
// CHECK: math.exp
// CHECK: scf.for {{.*}} step %c16 iter_args({{.*}}) -> (vector<4xf32>)
// CHECK-COUNT-8: vector.load {{.*}} : memref<?x64xf32>, vector<4xf32>
// CHECK: vector.store {{.*}} : memref<?x64xf32>, vector<4xf32>
// CHECK: else
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i32, f32, f32, f32, f32)
// CHECK: scf.for {{.*}} step %c8 iter_args({{.*}}) -> (f32, f32)
// CHECK-NOT: atomic
// CHECK: return
func.func @rgat_heads4(%rp: memref<?xi32>, %eid: memref<?xi32>, %map: memref<?xi32>,
                       %s: memref<?x4xf32>, %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s : memref<?x4xf32>)
      values(%z : memref<?x64xf32>[%map : memref<?xi32>])
      out(%o : memref<?x64xf32>)
  return
}

// -----

// A width of 3 (one head) takes no vector: one scalar kernel, 4 lanes per
// row (3 in use), 8 edges of a chunk at once.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: scf.if
// CHECK: gpu.launch
// CHECK-NOT: vector.load
// CHECK: return
func.func @narrow(%rp: memref<?xi32>, %eid: memref<?xi32>,
                  %s: memref<?x1xf32>, %z: memref<?x3xf32>, %o: memref<?x3xf32>) {
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s : memref<?x1xf32>) values(%z : memref<?x3xf32>)
      out(%o : memref<?x3xf32>)
  return
}

// PTX-LABEL: // gpu.module @rgat_heads4_kernel
// PTX: shfl.sync.bfly.b32
// PTX: shfl.sync.idx.b32
// PTX: ld.global.v4
// PTX: st.global.v4
// PTX-NOT: atom.
// PTX-LABEL: // gpu.module @rgat_heads4_kernel_0
