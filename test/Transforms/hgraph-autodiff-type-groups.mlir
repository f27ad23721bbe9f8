// RUN: hector-opt %s -hgraph-autodiff -split-input-file | FileCheck %s

// The softmax within (destination, edge type) groups: α = softmax_g(s),
// ds = α ⊙ dα − α ⊙ group_sum(α ⊙ dα), the sum over the edge's own group
// (hgraph.group_sum), never over all of its destination's incoming edges
// (no aggregate to dst, no gather from dst).

// CHECK-LABEL: hgraph.func @within_bwd(
// CHECK-SAME: %[[ALPHA:[^:]*]]: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "saved0", hgraph.role = "saved"}
// CHECK:      %[[DALPHA:.*]] = hgraph.dot
// CHECK:      %[[W:.*]] = hgraph.mul %[[ALPHA]], %[[DALPHA]] : !hgraph.edge<2xf32, heads = 2>
// CHECK-NOT:  hgraph.aggregate
// CHECK:      %[[G:.*]] = hgraph.group_sum %[[W]] : !hgraph.edge<2xf32, heads = 2>
// CHECK:      %[[AG:.*]] = hgraph.mul %[[ALPHA]], %[[G]]
// CHECK:      %[[DS:.*]] = hgraph.sub %[[W]], %[[AG]]
// CHECK:      hgraph.return %{{.*}}, %[[DS]]
hgraph.func @within(%g: !hgraph.graph, %z: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "z"},
                    %s: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "s"}) -> !hgraph.node<8xf32, heads = 2> {
  %alpha = hgraph.edge_softmax %s by_type : !hgraph.edge<2xf32, heads = 2>
  %m = hgraph.scale %alpha, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %o = hgraph.aggregate sum %m : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %o : !hgraph.node<8xf32, heads = 2>
}

// -----

// A group sum is its own adjoint: dx = group_sum(dy).
// CHECK-LABEL: hgraph.func @sums_bwd(
// CHECK-SAME: %[[DY:[^:]*]]: !hgraph.edge<4xf32> {hgraph.name = "d_result0", hgraph.role = "grad_output"}
// CHECK:      %[[DX:.*]] = hgraph.group_sum %[[DY]] : !hgraph.edge<4xf32>
// CHECK:      hgraph.return %[[DX]]
hgraph.func @sums(%g: !hgraph.graph, %x: !hgraph.edge<4xf32> {hgraph.name = "x"}) -> !hgraph.edge<4xf32> {
  %y = hgraph.group_sum %x : !hgraph.edge<4xf32>
  hgraph.return %y : !hgraph.edge<4xf32>
}
