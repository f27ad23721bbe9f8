// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s

// Round trip of htmpl.softmax_aggregate: per-edge values, values read
// through a compact map, several heads, a launch size.

// CHECK-LABEL: func.func @forms
func.func @forms(%rp: memref<?xi32>, %eid: memref<?xi32>, %map: memref<?xi32>,
                 %s1: memref<?x1xf32>, %s4: memref<?x4xf32>,
                 %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  // CHECK: htmpl.softmax_aggregate csr(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) scores(%{{.*}} : memref<?x1xf32>) values(%{{.*}} : memref<?x64xf32>) out(%{{.*}} : memref<?x64xf32>)
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s1 : memref<?x1xf32>) values(%z : memref<?x64xf32>)
      out(%o : memref<?x64xf32>)
  // CHECK: htmpl.softmax_aggregate csr(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) scores(%{{.*}} : memref<?x4xf32>) values(%{{.*}} : memref<?x64xf32>[%{{.*}} : memref<?xi32>]) out(%{{.*}} : memref<?x64xf32>) {launch_bounds = 128 : i64}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s4 : memref<?x4xf32>)
      values(%z : memref<?x64xf32>[%map : memref<?xi32>])
      out(%o : memref<?x64xf32>) {launch_bounds = 128 : i64}
  return
}
