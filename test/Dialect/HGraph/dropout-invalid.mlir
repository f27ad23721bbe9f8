// RUN: hector-opt %s -split-input-file -verify-diagnostics

// One case per hgraph.dropout verifier error.

hgraph.func @p_above_one(%g: !hgraph.graph, %a: !hgraph.edge<2xf32, heads = 2>, %s: !hgraph.seed) {
  // expected-error @+1 {{drop probability p must be in [0, 1], got 1.500000e+00}}
  %0 = hgraph.dropout %a, %s p 1.500000e+00 : !hgraph.edge<2xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @p_negative(%g: !hgraph.graph, %a: !hgraph.edge<2xf32, heads = 2>, %s: !hgraph.seed) {
  // expected-error @+1 {{drop probability p must be in [0, 1], got -1.000000e-01}}
  %0 = hgraph.dropout %a, %s p -1.000000e-01 : !hgraph.edge<2xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @p_nan(%g: !hgraph.graph, %a: !hgraph.edge<2xf32, heads = 2>, %s: !hgraph.seed) {
  // expected-error @+1 {{drop probability p must be in [0, 1], got nan}}
  %0 = hgraph.dropout %a, %s p 0x7FF8000000000000 : !hgraph.edge<2xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @node_wise(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %s: !hgraph.seed) {
  // expected-error @+1 {{drops elements of edge-wise values (its mask hashes the edge index), got '!hgraph.node<8xf32>'}}
  %0 = hgraph.dropout %h, %s p 5.000000e-01 : !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @seed_not_a_seed(%g: !hgraph.graph, %a: !hgraph.edge<2xf32>, %w: !hgraph.weight<single, 1xf32>) {
  // expected-error @+1 {{operand #1 must be a random seed read at run time, but got '!hgraph.weight<single, 1xf32>'}}
  %0 = "hgraph.dropout"(%a, %w) <{p = 5.000000e-01 : f64}> : (!hgraph.edge<2xf32>, !hgraph.weight<single, 1xf32>) -> !hgraph.edge<2xf32>
  hgraph.return
}

// -----

hgraph.func @result_type_differs(%g: !hgraph.graph, %a: !hgraph.edge<2xf32>, %s: !hgraph.seed) {
  // expected-error @+1 {{all of {input, result} have same type}}
  %0 = "hgraph.dropout"(%a, %s) <{p = 5.000000e-01 : f64}> : (!hgraph.edge<2xf32>, !hgraph.seed) -> !hgraph.edge<4xf32>
  hgraph.return
}

// -----

hgraph.func @int_p(%g: !hgraph.graph, %a: !hgraph.edge<2xf32>, %s: !hgraph.seed) {
  // expected-error @+1 {{Invalid attribute `p` in property conversion: 1 : i64}}
  %0 = "hgraph.dropout"(%a, %s) <{p = 1 : i64}> : (!hgraph.edge<2xf32>, !hgraph.seed) -> !hgraph.edge<2xf32>
  hgraph.return
}
