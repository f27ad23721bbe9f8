// RUN: hector-opt %s | FileCheck %s
// RUN: hector-opt %s | hector-opt | FileCheck %s

// An evicted value crosses the pair as !hgraph.stored and comes back through
// a prefetch of the same slot.

// CHECK-LABEL: hgraph.func @f_fwd
// CHECK-SAME: -> (!hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>)
// CHECK: %[[Z:.*]] = hgraph.typed_linear
// CHECK: hgraph.aggregate sum %[[Z]]
// CHECK: %[[S:.*]] = hgraph.evict %[[Z]] to disk slot 3 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
// CHECK: hgraph.return %{{.*}}, %[[S]]
hgraph.func @f_fwd(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %W: !hgraph.weight<edge, 8x8xf32>) -> (!hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>) {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %o = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %s = hgraph.evict %z to disk slot 3 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  hgraph.return %o, %s : !hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>
}

// CHECK-LABEL: hgraph.func @f_bwd
// CHECK-SAME: %[[ARG:[^:]*]]: !hgraph.stored<!hgraph.edge<8xf32, heads = 2>>
// CHECK: %[[V:.*]] = hgraph.prefetch %[[ARG]] slot 0 : !hgraph.stored<!hgraph.edge<8xf32, heads = 2>> -> !hgraph.edge<8xf32, heads = 2>
// CHECK: hgraph.aggregate sum %[[V]]
hgraph.func @f_bwd(%g: !hgraph.graph, %s: !hgraph.stored<!hgraph.edge<8xf32, heads = 2>>) -> !hgraph.node<8xf32, heads = 2> {
  %v = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32, heads = 2>> -> !hgraph.edge<8xf32, heads = 2>
  %o = hgraph.aggregate sum %v : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %o : !hgraph.node<8xf32, heads = 2>
}
