// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s

// Round trip of the row-dot epilogue of htmpl.gemm (s[i] = out[o(i)] · a[t(i)]).

// CHECK-LABEL: func.func @row_dot_typed
// CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}} : memref<?x64x32xf32>) out(%{{.*}} : memref<?x32xf32>) segments(%{{.*}} : memref<?xi32>) row_dot(%{{.*}} : memref<?x32xf32>) into(%{{.*}} : memref<?x1xf32>)
func.func @row_dot_typed(%h: memref<?x64xf32>, %src: memref<?xi32>,
                         %W: memref<?x64x32xf32>, %z: memref<?x32xf32>,
                         %seg: memref<?xi32>, %a: memref<?x32xf32>,
                         %s: memref<?x1xf32>) {
  htmpl.gemm lhs(%h : memref<?x64xf32>[%src : memref<?xi32>])
             rhs(%W : memref<?x64x32xf32>) out(%z : memref<?x32xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x32xf32>) into(%s : memref<?x1xf32>)
  return
}

// A single weight (row 0 of the vector), transposed, with a scatter list
// and knobs.
// CHECK-LABEL: func.func @row_dot_single
// CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>) rhs(%{{.*}} : memref<32x64xf32>) out(%{{.*}} : memref<?x32xf32>[%{{.*}} : memref<?xi32>]) row_dot(%{{.*}} : memref<1x32xf32>) into(%{{.*}} : memref<?x1xf32>) {tile = array<i64: 32, 32, 8>, transpose_rhs}
func.func @row_dot_single(%h: memref<?x64xf32>, %W: memref<32x64xf32>,
                          %z: memref<?x32xf32>, %o: memref<?xi32>,
                          %a: memref<1x32xf32>, %s: memref<?x1xf32>) {
  htmpl.gemm lhs(%h : memref<?x64xf32>) rhs(%W : memref<32x64xf32>)
             out(%z : memref<?x32xf32>[%o : memref<?xi32>])
             row_dot(%a : memref<1x32xf32>) into(%s : memref<?x1xf32>)
             {transpose_rhs, tile = array<i64: 32, 32, 8>}
  return
}

// Several heads: one dot per head's block of columns.
// CHECK-LABEL: func.func @row_dot_heads
// CHECK: row_dot(%{{.*}} : memref<?x64xf32>) into(%{{.*}} : memref<?x4xf32>)
func.func @row_dot_heads(%h: memref<?x64xf32>, %src: memref<?xi32>,
                         %W: memref<?x64x64xf32>, %z: memref<?x64xf32>,
                         %seg: memref<?xi32>, %a: memref<?x64xf32>,
                         %s: memref<?x4xf32>) {
  htmpl.gemm lhs(%h : memref<?x64xf32>[%src : memref<?xi32>])
             rhs(%W : memref<?x64x64xf32>) out(%z : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x64xf32>) into(%s : memref<?x4xf32>)
  return
}
