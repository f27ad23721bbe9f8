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

// -----

// Four heads of 16 columns: a dot per head into s[row, col / 16]. A group
// of lanes reduces together only while its columns stay in one head: 4
// lanes of 4 columns each in the vector kernel (offsets 2, 1), 16 lanes of
// one column in the general kernel (the lanes' columns j·16 + l are head j),
// and an mma group's 4 lanes of 2 columns with tensor cores.
// CHECK-LABEL: func.func @row_dot_heads
// CHECK: memref.store %{{.*}}, %[[S:arg6]][%{{.*}}, %{{.*}}] : memref<?x4xf32>
// CHECK: gpu.launch
// CHECK-NOT: %c8_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK-NOT: gpu.launch
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[S]][%{{.*}}, %{{.*}}] : (f32, memref<?x4xf32>) -> f32
// CHECK: gpu.launch
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[S]]
// TF32-LABEL: func.func @row_dot_heads
// TF32: nvgpu.mma.sync
// TF32: gpu.shuffle xor %{{.*}}, %c2_i32
// TF32: memref.atomic_rmw addf %{{.*}}, %arg6[%{{.*}}, %{{.*}}] : (f32, memref<?x4xf32>)
func.func @row_dot_heads(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                         %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                         %seg: memref<?xi32>, %a: memref<?x64xf32>,
                         %s: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x64xf32>) into(%s : memref<?x4xf32>)
  return
}

// -----

// Heads of 2 columns: a vector kernel lane's 4 columns span two heads, so
// each column is its own share (no shuffles there), added at col / 2.
// CHECK-LABEL: func.func @row_dot_narrow_heads
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK-NOT: gpu.shuffle
// CHECK: arith.divui %{{.*}}, %c2 : index
// CHECK: memref.atomic_rmw addf %{{.*}}, %arg6[%{{.*}}, %{{.*}}] : (f32, memref<?x32xf32>) -> f32
// CHECK: gpu.launch
func.func @row_dot_narrow_heads(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                                %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                                %seg: memref<?xi32>, %a: memref<?x64xf32>,
                                %s: memref<?x32xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x64xf32>) into(%s : memref<?x32xf32>)
  return
}
