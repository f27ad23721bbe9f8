// RUN: hector-opt %s --split-input-file --htmpl-to-loops | FileCheck %s

// The row-dot epilogue on the CPU: after the GEMM's nest, a loop over the
// rows reads back each stored row (through out_rows) and dots it with the
// row's type slice of the vector.

// CHECK-LABEL: func.func @row_dot
// CHECK-SAME: %[[OUT:[^:]+]]: memref<?x64xf32>, %[[OROWS:[^:]+]]: memref<?xi32>, %[[SEG:[^:]+]]: memref<?xi32>, %[[A:[^:]+]]: memref<?x64xf32>, %[[S:[^:]+]]: memref<?x1xf32>
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[OUT]]
// The row-dot nest comes after the GEMM's.
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: scf.if
// CHECK: %[[O:.*]] = arith.index_cast
// CHECK: scf.for
// CHECK: memref.load %[[OUT]][%[[O]], %{{.*}}]
// CHECK: memref.load %[[A]][%{{.*}}, %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[S]][%[[I]], %{{.*}}] : memref<?x1xf32>
func.func @row_dot(%lhs: memref<?x64xf32>, %rhs: memref<?x64x64xf32>,
                   %out: memref<?x64xf32>, %orows: memref<?xi32>,
                   %seg: memref<?xi32>, %a: memref<?x64xf32>,
                   %s: memref<?x1xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<?x64x64xf32>)
             out(%out : memref<?x64xf32>[%orows : memref<?xi32>])
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x64xf32>) into(%s : memref<?x1xf32>)
  return
}


// -----

// Four heads: one dot per head over its 16 columns, stored at s[i, h].

// CHECK-LABEL: func.func @row_dot_heads
// CHECK-SAME: %[[OUT:[^:]+]]: memref<?x64xf32>, %[[SEG:[^:]+]]: memref<?xi32>, %[[A:[^:]+]]: memref<?x64xf32>, %[[S:[^:]+]]: memref<?x4xf32>
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK: memref.store %{{.*}}, %[[S]][%[[I]], %c0{{.*}}] : memref<?x4xf32>
// CHECK: scf.for %{{.*}} = %c16{{.*}} to %c32{{.*}} step
// CHECK: memref.store %{{.*}}, %[[S]][%[[I]], %c1{{.*}}] : memref<?x4xf32>
// CHECK: scf.for %{{.*}} = %c32{{.*}} to %c48{{.*}} step
// CHECK: memref.store %{{.*}}, %[[S]][%[[I]], %c2{{.*}}] : memref<?x4xf32>
// CHECK: scf.for %{{.*}} = %c48{{.*}} to %c64{{.*}} step
// CHECK: memref.store %{{.*}}, %[[S]][%[[I]], %c3{{.*}}] : memref<?x4xf32>
// CHECK-NOT: memref.store %{{.*}}, %[[S]]
func.func @row_dot_heads(%lhs: memref<?x64xf32>, %rhs: memref<?x64x64xf32>,
                         %out: memref<?x64xf32>, %seg: memref<?xi32>,
                         %a: memref<?x64xf32>, %s: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<?x64x64xf32>)
             out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x64xf32>) into(%s : memref<?x4xf32>)
  return
}
