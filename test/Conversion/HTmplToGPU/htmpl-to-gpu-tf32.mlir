// RUN: hector-opt %s --split-input-file --htmpl-to-gpu="precision=tf32" --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --split-input-file --htmpl-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=FP32
// RUN: not hector-opt %s --split-input-file --htmpl-to-gpu="precision=fp16" 2>&1 | FileCheck %s --check-prefix=BAD
// Through the CUDA backend: TF32 rounding and m16n8k8 mma in the PTX.
// RUN: hector-opt %s --htmpl-to-gpu="precision=tf32" | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=PTX
// hectorc --precision=tf32 reaches the pass; fp32 stays the default.
// RUN: hectorc %hector_src_root/examples/rgcn.mlir --target=cuda --precision=tf32 --emit=ptx | FileCheck %s --check-prefix=RGCN
// RUN: hectorc %hector_src_root/examples/rgcn.mlir --target=cuda --emit=ptx | FileCheck %s --check-prefix=RGCN32

// precision=tf32: the row-mode vector kernel multiplies on tensor cores.
// Eight warps tile the 64 x 64 block as 2 x 4 warps of 32 x 16 outputs
// (2 x 2 mma tiles each); the staged tiles are rounded to TF32 on their way
// to shared memory, A as [64][32 + 4] and B as [32][64 + 8] (conflict-free
// fragment loads); each of the 4 k-steps of a 32-deep k-tile issues 4
// nvgpu.mma.sync. The epilogue stores pairs of columns (c0 c1, c2 c3). The
// general kernel (operands not 16-byte aligned) stays fp32.
// The default (fp32) emits no tensor-core op and no rounding.

// BAD: htmpl-to-gpu: precision must be fp32 or tf32, got 'fp16'
// FP32-NOT: nvgpu.mma.sync
// FP32-NOT: nvvm.convert.float.to.tf32
// FP32-LABEL: func.func @fp32_fallbacks
// FP32-NOT: nvgpu.mma.sync
// FP32-NOT: nvvm.convert.float.to.tf32

// RGCN: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// RGCN32-NOT: mma.sync
// RGCN32-NOT: cvt.rna.tf32
// RGCN32: fma.rn.f32
// RGCN32-NOT: mma.sync
// RGCN32-NOT: cvt.rna.tf32

// PTX-LABEL: // gpu.module @tf32_typed_gather_kernel
// PTX-DAG: cvt.rna.tf32.f32
// PTX-DAG: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// PTX-LABEL: // gpu.module @tf32_typed_gather_kernel_0
// PTX-NOT: mma.sync
// PTX: fma.rn.f32

// CHECK-LABEL: func.func @tf32_typed_gather
// CHECK-SAME: (%[[LHS:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[ROWS:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<?x64x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[SEG:[-a-zA-Z0-9_]+]]: memref<?xi32>)
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} threads(%[[TX:[-a-zA-Z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, {{.*}} workgroup(%[[A:[-a-zA-Z0-9_]+]] : memref<64x36xf32, #gpu.address_space<workgroup>>, %[[B:[-a-zA-Z0-9_]+]] : memref<32x72xf32, #gpu.address_space<workgroup>>)
// CHECK-DAG: %[[WARP:[-a-zA-Z0-9_]+]] = arith.divui %[[TX]], %c32 : index
// CHECK-DAG: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %[[TX]], %c32 : index
// CHECK: memref.load %[[ROWS]]
// CHECK: vector.load %[[LHS]]
// CHECK: vector.load %[[RHS]]
// CHECK: scf.for
// CHECK: nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK: vector.store %{{.*}}, %[[A]]
// CHECK: vector.store %{{.*}}, %[[B]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[A]]
// CHECK: memref.load %[[B]]
// CHECK-COUNT-16: nvgpu.mma.sync(%{{.*}}, %{{.*}}, %{{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK: vector.extract %{{.*}}[0] : vector<2xf32> from vector<2x2xf32>
// CHECK: vector.store %{{.*}}, %[[OUT]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x64xf32>, vector<2xf32>
// CHECK: } else {
// CHECK-NOT: nvgpu.mma.sync
// CHECK: return
func.func @tf32_typed_gather(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                             %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                             %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>) {tile = array<i64: 64, 64, 32>, coarsen = 4}
  return
}

// -----

// A weight stored [N, K] (transpose_rhs) is staged column by column like A,
// [64][32 + 4], with 16-byte stores; accumulate loads and adds the pairs.
// CHECK-LABEL: func.func @tf32_transposed
// CHECK-SAME: (%{{.*}}: memref<?x64xf32>, %[[RHS:[-a-zA-Z0-9_]+]]: memref<64x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>)
// CHECK: gpu.launch {{.*}} workgroup(%[[A:[-a-zA-Z0-9_]+]] : memref<64x36xf32, #gpu.address_space<workgroup>>, %[[B:[-a-zA-Z0-9_]+]] : memref<64x36xf32, #gpu.address_space<workgroup>>)
// CHECK: vector.load %[[RHS]]
// CHECK: vector.store %{{.*}}, %[[B]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x36xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: nvgpu.mma.sync
// CHECK: %[[OLD:[-a-zA-Z0-9_]+]] = vector.load %[[OUT]][%[[O:[-a-zA-Z0-9_]+]], %[[C:[-a-zA-Z0-9_]+]]] {alignment = 8 : i64} : memref<?x64xf32>, vector<2xf32>
// CHECK: %[[SUM:[-a-zA-Z0-9_]+]] = arith.addf %[[OLD]], %{{.*}} : vector<2xf32>
// CHECK: vector.store %[[SUM]], %[[OUT]][%[[O]], %[[C]]]
func.func @tf32_transposed(%lhs: memref<?x64xf32>, %rhs: memref<64x64xf32>,
                           %out: memref<?x64xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<64x64xf32>)
             out(%out : memref<?x64xf32>)
             {transpose_rhs, accumulate, tile = array<i64: 64, 64, 32>, coarsen = 4}
  return
}

// -----

// Per-head 16 x 16 weights: the column tile narrows to 16 (B [16][16 + 8],
// A [64][16 + 4]), 4 x 2 warps of one mma tile each, two k-steps; heads on
// grid.z. Row scale per head, scatter, atomic adds of each element.
// CHECK-LABEL: func.func @tf32_per_head_scatter_atomic
// CHECK-SAME: (%{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?x4x16x16xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[OROWS:[-a-zA-Z0-9_]+]]: memref<?xi64>, %{{.*}}: memref<?xi32>, %[[S:[-a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c1, %{{.*}} = %c4) {{.*}} workgroup(%{{.*}} : memref<64x20xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x24xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-2: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: memref.load %[[OROWS]]
// CHECK: memref.load %[[S]]
// CHECK: memref.load %[[S]]
// CHECK: arith.mulf %{{.*}} : vector<2xf32>
// CHECK-COUNT-2: memref.atomic_rmw addf %{{.*}}, %[[OUT]]
// CHECK: } else {
func.func @tf32_per_head_scatter_atomic(%lhs: memref<?x64xf32>,
                                        %rhs: memref<?x4x16x16xf32>,
                                        %out: memref<?x64xf32>,
                                        %orows: memref<?xi64>,
                                        %seg: memref<?xi32>,
                                        %s: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<?x4x16x16xf32>)
             out(%out : memref<?x64xf32>[%orows : memref<?xi64>])
             segments(%seg : memref<?xi32>) row_scale(%s : memref<?x4xf32>)
             {accumulate, atomic, tile = array<i64: 64, 64, 32>, coarsen = 4}
  return
}

// -----

// What stays fp32 with precision=tf32: rows that are not 16-byte vectors
// (K = 6: no vector kernel), a row tile the warps cannot split into 16-row
// mma tiles (8 rows: the FMA vector kernel), weight gradients.
// CHECK-LABEL: func.func @fp32_fallbacks
// CHECK-NOT: nvgpu.mma.sync
// CHECK-NOT: nvvm.convert.float.to.tf32
// CHECK: return
func.func @fp32_fallbacks(%lhs6: memref<?x6xf32>, %rhs6: memref<6x8xf32>,
                          %out8: memref<?x8xf32>, %lhs: memref<?x64xf32>,
                          %rhs: memref<64x64xf32>, %out: memref<?x64xf32>,
                          %grad: memref<64x64xf32>) {
  htmpl.gemm lhs(%lhs6 : memref<?x6xf32>) rhs(%rhs6 : memref<6x8xf32>)
             out(%out8 : memref<?x8xf32>) {tile = array<i64: 64, 64, 32>, coarsen = 4}
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<64x64xf32>)
             out(%out : memref<?x64xf32>) {tile = array<i64: 8, 64, 32>, coarsen = 4}
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%out : memref<?x64xf32>)
             out(%grad : memref<64x64xf32>) {transpose_lhs, tile = array<i64: 64, 64, 32>, coarsen = 4}
  return
}
