// RUN: hector-opt %s --htmpl-to-loops --canonicalize --cse | FileCheck %s

// htmpl.softmax_aggregate on the CPU: one parallel iteration per node
// (groups of launch_bounds), which zeroes its own output row, walks its
// CSR row once carrying the running maximum and sum of each head, rescales
// and accumulates the row in place (plain loads and stores, no atomics),
// and divides by the sums when the row has edges.

// CHECK-LABEL: func.func @two_heads
// CHECK-SAME: %[[RP:[^:]+]]: memref<?xi32>, %[[EID:[^:]+]]: memref<?xi32>, %[[MAP:[^:]+]]: memref<?xi32>, %[[S:[^:]+]]: memref<?x2xf32>, %[[Z:[^:]+]]: memref<?x8xf32>, %[[O:[^:]+]]: memref<?x8xf32>
// CHECK: scf.parallel
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[O]]
// CHECK: %[[W:.*]]:4 = scf.for %[[SLOT:.*]] = %{{.*}} to %{{.*}} step %c1 iter_args(%[[M0:.*]] = %{{.*}}, %[[M1:.*]] = %{{.*}}, %[[L0:.*]] = %{{.*}}, %[[L1:.*]] = %{{.*}}) -> (f32, f32, f32, f32)
// CHECK: memref.load %[[EID]][%[[SLOT]]]
// CHECK: memref.load %[[MAP]]
// CHECK: %[[X0:.*]] = memref.load %[[S]][%{{.*}}, %c0]
// CHECK: %[[N0:.*]] = arith.maximumf %[[M0]], %[[X0]]
// CHECK: %[[D0:.*]] = arith.subf %[[M0]], %[[N0]]
// CHECK: %[[C0:.*]] = math.exp %[[D0]]
// CHECK: math.exp
// CHECK: arith.mulf %[[L0]], %[[C0]]
// CHECK: scf.for
// CHECK: memref.load %[[O]]
// CHECK: memref.load %[[Z]]
// CHECK: memref.store {{.*}}, %[[O]]
// CHECK: memref.load %[[S]][%{{.*}}, %c1]
// CHECK: scf.yield
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi ult
// CHECK: scf.if %[[NONEMPTY]]
// CHECK: arith.divf %{{.*}}, %[[W]]#2
// CHECK: arith.divf %{{.*}}, %[[W]]#3
// CHECK-NOT: atomic_rmw
// CHECK: return
func.func @two_heads(%rp: memref<?xi32>, %eid: memref<?xi32>, %map: memref<?xi32>,
                     %s: memref<?x2xf32>, %z: memref<?x8xf32>, %o: memref<?x8xf32>) {
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s : memref<?x2xf32>)
      values(%z : memref<?x8xf32>[%map : memref<?xi32>])
      out(%o : memref<?x8xf32>)
  return
}
