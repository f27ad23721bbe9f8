// RUN: hector-opt %s --split-input-file --htmpl-to-gpu --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --split-input-file --htmpl-to-gpu="precision=tf32" --canonicalize --cse | FileCheck %s --check-prefix=TF32

// The row-dot epilogue (docs/gpu-templates.md, "Epilogue"): s is cleared by
// a first kernel; in each GEMM kernel every thread forms its share of its
// rows' dots from its accumulators, the lanes that hold one row sum them
// with xor shuffles (16 lanes a row at N = 64: offsets 8, 4, 2, 1; 4 lanes
// of an mma group with tensor cores: 2, 1), and the first lane adds the sum
// to s atomically.

// CHECK-LABEL: func.func @row_dot
// The clearing kernel: one zero store per element of s.
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[S:arg6]][%{{.*}}, %{{.*}}] : memref<?x1xf32>
// The vector kernel (16-byte rows).
// CHECK: gpu.launch
// CHECK: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[S]][%{{.*}}, %{{.*}}] : (f32, memref<?x1xf32>) -> f32
// The general kernel (operands not 16-byte aligned).
// CHECK: gpu.launch
// CHECK: gpu.shuffle xor
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[S]]
// TF32-LABEL: func.func @row_dot
// TF32: nvgpu.mma.sync
// TF32: gpu.shuffle xor
// TF32: memref.atomic_rmw addf %{{.*}}, %arg6
func.func @row_dot(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                   %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                   %seg: memref<?xi32>, %a: memref<?x64xf32>,
                   %s: memref<?x1xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x64xf32>) into(%s : memref<?x1xf32>)
  return
}

// -----

// Without the epilogue: no shuffles, no atomics.
// CHECK-LABEL: func.func @no_row_dot
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: memref.atomic_rmw
// CHECK: return
func.func @no_row_dot(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                      %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                      %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
  return
}
