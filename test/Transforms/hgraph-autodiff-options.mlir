// RUN: hector-opt %s -hgraph-autodiff='wrt=W' | FileCheck %s --check-prefix=WRT
// RUN: not hector-opt %s -hgraph-autodiff='wrt=nope' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not hector-opt %s -hgraph-autodiff='save=some' 2>&1 | FileCheck %s --check-prefix=SAVE

// Only the weight's gradient is asked for: no input gradient is built.
// WRT-LABEL: hgraph.func @f_bwd(
// WRT-SAME:  -> (!hgraph.weight<edge, 8x4xf32> {hgraph.name = "d_W", hgraph.role = "grad"})
// WRT-NOT:   typed_linear
// WRT:       hgraph.weight_grad
// UNKNOWN: error: hgraph-autodiff: 'wrt' names 'nope', which is not an argument of @f
// SAVE: error: hgraph-autodiff: unknown save policy 'some' (one of: materialized, all, none)
hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
               %W: !hgraph.weight<edge, 8x4xf32> {hgraph.name = "W"}) -> !hgraph.node<4xf32> {
  %m = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}
