// RUN: hector-opt %s -hgraph-autodiff | FileCheck %s
// RUN: hector-opt %s -hgraph-autodiff='save=all' | FileCheck %s --check-prefix=ALL
// RUN: not hector-opt %s -hgraph-autodiff='wrt=seed' 2>&1 | FileCheck %s --check-prefix=WRT

// Attention dropout: the gradient of hgraph.dropout is the same op on the
// incoming gradient (the mask redrawn from the seed); the seed is an argument
// of the backward and never gets a gradient; no mask is saved.

// CHECK-LABEL: hgraph.func @attend_fwd(
// CHECK-SAME: %{{.*}}: !hgraph.seed {hgraph.name = "seed"}
// CHECK-SAME: -> (!hgraph.node<8xf32, heads = 2> {hgraph.name = "result0", hgraph.role = "output"}, !hgraph.edge<2xf32, heads = 2> {hgraph.name = "saved0", hgraph.role = "saved"})
// CHECK-LABEL: hgraph.func @attend_bwd(
// CHECK-SAME: %[[Z:[^:]*]]: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "z"}, %[[SEED:[^:]*]]: !hgraph.seed {hgraph.name = "seed"}, %[[ALPHA:[^:]*]]: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "saved0", hgraph.role = "saved"}, %[[DOUT:[^:]*]]: !hgraph.node<8xf32, heads = 2> {hgraph.name = "d_result0", hgraph.role = "grad_output"})
// CHECK-SAME: -> (!hgraph.edge<8xf32, heads = 2> {hgraph.name = "d_z", hgraph.role = "grad"}, !hgraph.edge<2xf32, heads = 2> {hgraph.name = "d_s", hgraph.role = "grad"})
// CHECK-NOT: d_seed
// CHECK:      %[[KEPT:.*]] = hgraph.dropout %[[ALPHA]], %[[SEED]] p 2.500000e-01
// CHECK:      %[[DM:.*]] = hgraph.gather %[[DOUT]] from dst
// CHECK:      %[[DZ:.*]] = hgraph.scale %[[KEPT]], %[[DM]]
// CHECK:      %[[DKEPT:.*]] = hgraph.dot %[[DM]], %[[Z]]
// CHECK:      %[[DALPHA:.*]] = hgraph.dropout %[[DKEPT]], %[[SEED]] p 2.500000e-01
// CHECK:      hgraph.mul %[[ALPHA]], %[[DALPHA]]
// CHECK:      hgraph.return %[[DZ]]

// WRT: error: hgraph-autodiff: 'wrt' names 'seed', a seed, which has no gradient

// save=all saves the dropped coefficients instead of redrawing them.
// ALL-LABEL: hgraph.func @attend_bwd(
// ALL-COUNT-1: hgraph.dropout
// ALL-NOT: hgraph.dropout
hgraph.func @attend(%g: !hgraph.graph, %z: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "z"},
                    %s: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "s"},
                    %seed: !hgraph.seed {hgraph.name = "seed"}) -> !hgraph.node<8xf32, heads = 2> {
  %alpha = hgraph.edge_softmax %s : !hgraph.edge<2xf32, heads = 2>
  %d = hgraph.dropout %alpha, %seed p 2.500000e-01 : !hgraph.edge<2xf32, heads = 2>
  %msg = hgraph.scale %d, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %out : !hgraph.node<8xf32, heads = 2>
}
