// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse -split-input-file | FileCheck %s

// hgraph.dropout is evaluated inside the traversal that consumes it: the
// seed (memref<1xi64>, read whole) and the caller's edge index (edge_perm)
// are leaves of that traversal, the mask is integer arithmetic on them
// (MurmurHash3's finalizer, keyed by the seed: the keys once per edge, the
// hash once per edge and head, outside the feature loop); no mask or
// dropped value is stored.

// CHECK-LABEL: func.func @attend
// CHECK-SAME: %[[PERM:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_perm", role = "graph", shape = ["E"]}}
// CHECK-SAME: %[[Z:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "z", role = "input", shape = ["E", 8]}}
// CHECK-SAME: %[[SEED:[^:]*]]: memref<1xi64> {hector.arg = {name = "seed", role = "input", shape = [1]}}
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "result0", role = "output", shape = ["N", 8]}}
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.33333337 : f32
// CHECK-DAG: %[[THRESHOLD:.*]] = arith.constant 4194304 : i32
// CHECK-DAG: %[[M1:.*]] = arith.constant -2048144789 : i32
// CHECK-DAG: %[[M2:.*]] = arith.constant -1028477387 : i32
// CHECK: htmpl.traversal edges {{.*}} outs(%[[ALPHA:[^ ]*]] : memref<?x2xf32> as edge)
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[PERM]] : memref<?xi32> as edge, %[[ALPHA]] : memref<?x2xf32> as edge, %[[SEED]] : memref<1xi64> as whole, %[[Z]] : memref<?x8xf32> as edge) outs(%[[OUT]] : memref<?x8xf32> as dst)
// CHECK-NEXT: ^bb0(%{{.*}}: index, %[[RP:[^:]*]]: index, %[[RA:[^:]*]]: index, %{{[^:]*}}: index, %[[RZ:[^:]*]]: index, %[[RO:[^:]*]]: index):
// The seed's keys and the edge's counter base n·W, once per edge:
// CHECK-NEXT: %[[S:.*]] = memref.load %[[SEED]][%{{.*}}] : memref<1xi64>
// CHECK: arith.muli %{{.*}}, %[[M1]] : i32
// CHECK: arith.muli %{{.*}}, %[[M2]] : i32
// CHECK: %[[N:.*]] = memref.load %[[PERM]][%[[RP]]] : memref<?xi32>
// CHECK-NEXT: %[[NW:.*]] = arith.muli %[[N]], %{{.*}} : i32
// then the hash of (n·W + head) per head, outside the feature loop:
// CHECK-NEXT: scf.for %[[HEAD:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[A:.*]] = memref.load %[[ALPHA]][%[[RA]], %[[HEAD]]]
// CHECK-NEXT: %[[J:.*]] = arith.index_castui %[[HEAD]] : index to i32
// CHECK-NEXT: %[[C:.*]] = arith.addi %[[NW]], %[[J]] : i32
// CHECK: %[[KEEP:.*]] = arith.cmpi uge, %{{.*}}, %[[THRESHOLD]] : i32
// CHECK-NEXT: %[[SCALED:.*]] = arith.mulf %[[A]], %[[SCALE]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.select %[[KEEP]], %[[SCALED]], %{{.*}} : f32
// CHECK-NEXT: scf.for
// CHECK: %[[ZV:.*]] = memref.load %[[Z]][%[[RZ]], %{{.*}}]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[D]], %[[ZV]] : f32
// CHECK-NEXT: htmpl.accumulate add %[[M]], %[[OUT]][%[[RO]], %{{.*}}]
// CHECK-NOT: memref.alloc
// CHECK: return
hgraph.func @attend(%g: !hgraph.graph, %z: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "z"},
                    %s: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "s"},
                    %seed: !hgraph.seed {hgraph.name = "seed"}) -> !hgraph.node<8xf32, heads = 2> {
  %alpha = hgraph.edge_softmax %s : !hgraph.edge<2xf32, heads = 2>
  %d = hgraph.dropout %alpha, %seed p 2.500000e-01 : !hgraph.edge<2xf32, heads = 2>
  %msg = hgraph.scale %d, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %out : !hgraph.node<8xf32, heads = 2>
}

// -----

// p = 1 drops everything: the stored result is zeros, no hash is computed.
// CHECK-LABEL: func.func @drop_all
// CHECK: htmpl.traversal edges
// CHECK-NOT: arith.muli
// CHECK-NOT: memref.load
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x4xf32>
hgraph.func @drop_all(%g: !hgraph.graph, %x: !hgraph.edge<4xf32> {hgraph.name = "x"},
                      %seed: !hgraph.seed {hgraph.name = "seed"}) -> !hgraph.edge<4xf32> {
  %d = hgraph.dropout %x, %seed p 1.000000e+00 : !hgraph.edge<4xf32>
  hgraph.return %d : !hgraph.edge<4xf32>
}

// -----

// p = 0 keeps everything unscaled: the input is copied, no hash is computed
// (the op's folder does the same at the hgraph level).
// CHECK-LABEL: func.func @keep_all
// CHECK: htmpl.traversal edges
// CHECK-NOT: arith.muli
// CHECK: %[[X:.*]] = memref.load
// CHECK-NEXT: memref.store %[[X]]
hgraph.func @keep_all(%g: !hgraph.graph, %x: !hgraph.edge<4xf32> {hgraph.name = "x"},
                      %seed: !hgraph.seed {hgraph.name = "seed"}) -> !hgraph.edge<4xf32> {
  %d = hgraph.dropout %x, %seed p 0.000000e+00 : !hgraph.edge<4xf32>
  hgraph.return %d : !hgraph.edge<4xf32>
}
