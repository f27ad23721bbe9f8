// RUN: hector-opt %s --hgraph-to-htmpl=fuse-softmax-aggregate=true --canonicalize --cse -split-input-file | FileCheck %s
// RUN: hector-opt %s --hgraph-to-htmpl=fuse-softmax-aggregate=false --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=UNFUSED

// An edge_softmax whose only use is `aggregate sum (scale α z) to dst`
// lowers with that aggregation to one htmpl.softmax_aggregate: the scores
// are stored per edge as before, then one walk of each destination's CSR
// row (online softmax) writes the output. No max/sum reduction traversal,
// no α buffer, no zero fill, no atomics. Anything else (α returned or read
// twice, a mean, the split softmax, fuse-softmax-aggregate=false) keeps the
// separate passes.

// RGAT, one head, z compact: the values are read through compact_map.
// CHECK-LABEL: func.func @rgat
// CHECK-SAME: %[[ROWPTR:[^:]+]]: memref<?xi32> {hector.arg = {name = "csr_row_ptr"
// CHECK-SAME: %[[EID:[^:]+]]: memref<?xi32> {hector.arg = {name = "csr_eid"
// CHECK-SAME: %[[MAP:[^:]+]]: memref<?xi32> {hector.arg = {name = "compact_map"
// CHECK-SAME: %[[OUT:[^:]+]]: memref<?x64xf32> {hector.arg = {name = "result0"
// CHECK: %[[Z:.*]] = memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK: htmpl.gemm {{.*}} out(%[[Z]] : memref<?x64xf32>)
// CHECK: %[[SCORES:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) outs(%[[SCORES]] : memref<?x1xf32> as edge)
// CHECK-NOT: htmpl.traversal
// CHECK: htmpl.softmax_aggregate csr(%[[ROWPTR]], %[[EID]] : memref<?xi32>, memref<?xi32>) scores(%[[SCORES]] : memref<?x1xf32>) values(%[[Z]] : memref<?x64xf32>[%[[MAP]] : memref<?xi32>]) out(%[[OUT]] : memref<?x64xf32>)
// CHECK-NOT: htmpl.traversal
// CHECK: return

// UNFUSED-LABEL: func.func @rgat
// UNFUSED: htmpl.traversal nodes
// UNFUSED: htmpl.traversal edges
// UNFUSED: htmpl.accumulate add
// UNFUSED-NOT: htmpl.softmax_aggregate
hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 64x64xf32> {hgraph.name = "W"},
                  %a: !hgraph.weight<edge, 64xf32> {hgraph.name = "a"},
                  %b: !hgraph.weight<edge, 64xf32> {hgraph.name = "b"}) -> !hgraph.node<64xf32> {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %Wb = hgraph.weight_product %W, %b : !hgraph.weight<edge, 64x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 64xf32>
  %ht = hgraph.gather %h from dst : !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %bv = hgraph.typed_vector %Wb : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %sb = hgraph.dot %ht, %bv : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  hgraph.return %out : !hgraph.node<64xf32>
}

// -----

// Two heads, z per edge (a GEMM result), scores [E, 2].
// CHECK-LABEL: func.func @heads
// CHECK: htmpl.gemm {{.*}} out(%[[Z:[^ ]+]] : memref<?x8xf32>)
// CHECK: htmpl.traversal edges coo({{.*}}) outs(%[[SCORES:[^ ]+]] : memref<?x2xf32> as edge)
// CHECK: htmpl.softmax_aggregate csr({{.*}}) scores(%[[SCORES]] : memref<?x2xf32>) values(%[[Z]] : memref<?x8xf32>) out(%{{.*}} : memref<?x8xf32>)
hgraph.func @heads(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                   %W: !hgraph.weight<edge, 8x8xf32>, %a: !hgraph.weight<edge, 8xf32>) -> !hgraph.node<8xf32, heads = 2> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %sa = hgraph.dot %z, %av : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %alpha = hgraph.edge_softmax %sa : !hgraph.edge<2xf32, heads = 2>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %out : !hgraph.node<8xf32, heads = 2>
}

// -----

// GAT-like: z is the source node's row, read through edge_src (never
// copied per edge).
// CHECK-LABEL: func.func @gather
// CHECK-SAME: %[[SRC:[^:]+]]: memref<?xi32> {hector.arg = {name = "edge_src"
// CHECK-SAME: %[[H:[^:]+]]: memref<?x16xf32>
// CHECK: htmpl.softmax_aggregate csr({{.*}}) scores(%{{.*}} : memref<?x1xf32>) values(%[[H]] : memref<?x16xf32>[%[[SRC]] : memref<?xi32>]) out(%{{.*}} : memref<?x16xf32>)
hgraph.func @gather(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %a: !hgraph.weight<edge, 16xf32>) -> !hgraph.node<16xf32> {
  %hs = hgraph.gather %h from src : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %d = hgraph.dot %hs, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %d : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %hs : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %out : !hgraph.node<16xf32>
}

// -----

// α returned (what a training forward saves): the separate passes.
// CHECK-LABEL: func.func @returned
// CHECK: htmpl.traversal nodes
// CHECK-NOT: htmpl.softmax_aggregate
// CHECK: return
hgraph.func @returned(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %s: !hgraph.edge<1xf32>)
    -> (!hgraph.node<8xf32> {hgraph.name = "out"}, !hgraph.edge<1xf32> {hgraph.name = "alpha"}) {
  %alpha = hgraph.edge_softmax %s : !hgraph.edge<1xf32>
  %hs = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %msg = hgraph.scale %alpha, %hs : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %out, %alpha : !hgraph.node<8xf32>, !hgraph.edge<1xf32>
}

// -----

// A mean, and a softmax with one column for a 2-head value: not fused.
// CHECK-LABEL: func.func @mean
// CHECK-NOT: htmpl.softmax_aggregate
// CHECK: return
hgraph.func @mean(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %s: !hgraph.edge<1xf32>) -> !hgraph.node<8xf32> {
  %alpha = hgraph.edge_softmax %s : !hgraph.edge<1xf32>
  %hs = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %msg = hgraph.scale %alpha, %hs : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %out = hgraph.aggregate mean %msg : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %out : !hgraph.node<8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_column
// CHECK-NOT: htmpl.softmax_aggregate
// CHECK: return
hgraph.func @broadcast_column(%g: !hgraph.graph, %z: !hgraph.edge<8xf32, heads = 2>, %s: !hgraph.edge<1xf32>) -> !hgraph.node<8xf32, heads = 2> {
  %alpha = hgraph.edge_softmax %s : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %out : !hgraph.node<8xf32, heads = 2>
}
