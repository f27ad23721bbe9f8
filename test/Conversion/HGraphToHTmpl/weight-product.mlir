// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse -split-input-file | FileCheck %s

// hgraph.weight_product: one scf.parallel over (type, element of the result
// slice), each element a dot product over the inner dimension, into a
// temporary weight buffer that its consumers read like a weight argument.

// CHECK-LABEL: func.func @matrix_vector
// CHECK-SAME: %[[X:[^:]*]]: memref<?x16xf32> {{.*}}, %[[W:[^:]*]]: memref<?x16x8xf32> {{.*}}, %[[B:[^:]*]]: memref<?x8xf32>
// CHECK: %[[R:.*]] = memref.dim %[[W]], %c0
// CHECK: %[[P:.*]] = memref.alloc(%[[R]]) : memref<?x16xf32>
// CHECK: scf.parallel (%[[K:.*]], %[[I:.*]]) = (%c0, %c0) to (%[[R]], %c16)
// CHECK: scf.for %[[L:.*]] = %c0 to %c8
// CHECK: memref.load %[[W]][%[[K]], %[[I]], %[[L]]]
// CHECK: memref.load %[[B]][%[[K]], %[[L]]]
// CHECK: memref.store %{{.*}}, %[[P]][%[[K]], %[[I]]]
// CHECK: htmpl.traversal edges {{.*}} ins(%[[X]] : memref<?x16xf32> as dst, %[[P]] : memref<?x16xf32> as etype)
// CHECK: memref.dealloc %[[P]]
hgraph.func @matrix_vector(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %W: !hgraph.weight<edge, 16x8xf32>, %b: !hgraph.weight<edge, 8xf32>) -> !hgraph.edge<1xf32> {
  %p = hgraph.weight_product %W, %b : !hgraph.weight<edge, 16x8xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 16xf32>
  %x = hgraph.gather %h from dst : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %pv = hgraph.typed_vector %p : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.dot %x, %pv : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}

// -----

// A node-typed factor of an edge-typed product: its slice is the node type
// of the edge type's source, read from the type's first edge; an edge type
// without edges gets a zero slice and reads no factor. The entry point says
// it assumes typed endpoints. The per-head factor's inner sum runs over the
// head block of the element's column only.

// CHECK-LABEL: func.func @node_of_src
// CHECK-SAME: %[[NT:[^:]*]]: memref<?xi32> {hector.arg = {name = "node_type"
// CHECK-SAME: %[[SRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_src"
// CHECK-SAME: %[[OFF:[^:]*]]: memref<?xi32> {hector.arg = {name = "etype_offsets"
// CHECK-SAME: %[[K:[^:]*]]: memref<?x16x16xf32> {{.*}}, %[[WATT:[^:]*]]: memref<?x2x8x8xf32>
// CHECK-SAME: hector.typed_endpoints
// CHECK: scf.parallel (%[[R:.*]], %[[I:.*]], %[[J:.*]]) =
// CHECK: %[[HEAD:.*]] = arith.divui %[[J]], %c8
// CHECK: %[[BEGIN:.*]] = arith.muli %[[HEAD]], %c8
// CHECK: %[[END:.*]] = arith.addi %[[BEGIN]], %c8
// CHECK: %[[FIRST:.*]] = memref.load %[[OFF]][%[[R]]]
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi ult
// CHECK: %[[T:.*]] = scf.if %[[NONEMPTY]] -> (index)
// CHECK: memref.load %[[SRC]]
// CHECK: memref.load %[[NT]]
// CHECK: } else {
// CHECK: %[[STOP:.*]] = arith.select %[[NONEMPTY]], %[[END]], %[[BEGIN]]
// CHECK: scf.for %[[L:.*]] = %[[BEGIN]] to %[[STOP]]
// CHECK: memref.load %[[K]][%[[T]], %[[I]], %[[L]]]
// CHECK: memref.load %[[WATT]][%[[R]],
// CHECK: htmpl.gemm
hgraph.func @node_of_src(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %K: !hgraph.weight<node, 16x16xf32>, %Watt: !hgraph.weight<edge, 2x8x8xf32>) -> !hgraph.edge<16xf32> {
  %p = hgraph.weight_product %K, %Watt node_of src : !hgraph.weight<node, 16x16xf32>, !hgraph.weight<edge, 2x8x8xf32> -> !hgraph.weight<edge, 16x16xf32>
  %k = hgraph.typed_linear %p, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %k : !hgraph.edge<16xf32>
}

// -----

// Two single weights: no type loop, a static buffer.

// CHECK-LABEL: func.func @single
// CHECK: %[[P:.*]] = memref.alloc() : memref<8x2xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c8, %c2)
// CHECK: htmpl.gemm lhs(%{{.*}}) rhs(%[[P]] : memref<8x2xf32>)
hgraph.func @single(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %A: !hgraph.weight<single, 8x4xf32>, %B: !hgraph.weight<single, 4x2xf32>) -> !hgraph.node<2xf32> {
  %p = hgraph.weight_product %A, %B : !hgraph.weight<single, 8x4xf32>, !hgraph.weight<single, 4x2xf32> -> !hgraph.weight<single, 8x2xf32>
  %y = hgraph.typed_linear %p, %h from node : !hgraph.weight<single, 8x2xf32>, !hgraph.node<8xf32> -> !hgraph.node<2xf32>
  hgraph.return %y : !hgraph.node<2xf32>
}


// -----

// weight_outer: one parallel loop over (type, row, column), each element the
// product of one element of each vector; per head, the diagonal blocks.
// CHECK-LABEL: func.func @outer
// CHECK: %[[R:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4x2xf32>
// CHECK: scf.parallel (%[[K:.*]], %[[HD:.*]], %[[I:.*]], %[[J:.*]]) =
// CHECK-DAG: memref.load %{{.*}}[%[[K]], %{{.*}}] : memref<?x8xf32>
// CHECK-DAG: memref.load %{{.*}}[%[[K]], %{{.*}}] : memref<?x4xf32>
// CHECK: memref.store %{{.*}}, %[[R]][%[[K]], %[[HD]], %[[I]], %[[J]]] : memref<?x2x4x2xf32>
hgraph.func @outer(%g: !hgraph.graph, %u: !hgraph.weight<edge, 8xf32> {hgraph.name = "u"},
                   %v: !hgraph.weight<edge, 4xf32> {hgraph.name = "v"})
    -> (!hgraph.weight<edge, 2x4x2xf32> {hgraph.name = "r"}) {
  %r = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 2x4x2xf32>
  hgraph.return %r : !hgraph.weight<edge, 2x4x2xf32>
}

// -----

// A weight outer product in a sum of weights (RGAT's `W_r b_r` gradient) is
// written straight into the sum's output, first whatever its place in the
// sum; the weight gradient's GEMM then accumulates into it. No temporary,
// no traversal adding one to the other.
// CHECK-LABEL: func.func @outer_in_sum
// CHECK-SAME: %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x4x4xf32> {hector.arg = {name = "r"
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: htmpl.gemm {{.*}} out(%[[OUT]] : memref<?x4x4xf32>) {{.*}} {accumulate, transpose_lhs}
// CHECK-NOT: htmpl.traversal
// CHECK: return
hgraph.func @outer_in_sum(%g: !hgraph.graph, %x: !hgraph.node<4xf32> {hgraph.name = "x"},
                          %d: !hgraph.edge<4xf32> {hgraph.name = "d"},
                          %u: !hgraph.weight<edge, 4xf32> {hgraph.name = "u"},
                          %v: !hgraph.weight<edge, 4xf32> {hgraph.name = "v"})
    -> (!hgraph.weight<edge, 4x4xf32> {hgraph.name = "r"}) {
  %w = hgraph.weight_grad %x from src, %d : !hgraph.node<4xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 4x4xf32>
  %o = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x4xf32>
  %r = hgraph.add %w, %o : !hgraph.weight<edge, 4x4xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x4xf32>
}
