// RUN: hector-opt %s -hgraph-autodiff -split-input-file -verify-diagnostics

hgraph.func @product(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<edge, 4x4xf32>, %V: !hgraph.weight<edge, 4x4xf32>) -> !hgraph.edge<4xf32> {
  // expected-error @+1 {{hgraph-autodiff: no gradient rule for a product of two matrices or of weights indexed differently}}
  %wv = hgraph.weight_product %W, %V : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4x4xf32> -> !hgraph.weight<edge, 4x4xf32>
  %y = hgraph.typed_linear %wv, %h from src : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  hgraph.return %y : !hgraph.edge<4xf32>
}

// -----

hgraph.func @one_column_scale(%g: !hgraph.graph, %s: !hgraph.edge<1xf32>, %x: !hgraph.edge<4xf32, heads = 2>) -> !hgraph.edge<4xf32, heads = 2> {
  // expected-error @+1 {{hgraph-autodiff: no gradient rule for a one-column scale of a multi-head value}}
  %y = hgraph.scale %s, %x : !hgraph.edge<1xf32>, !hgraph.edge<4xf32, heads = 2> -> !hgraph.edge<4xf32, heads = 2>
  hgraph.return %y : !hgraph.edge<4xf32, heads = 2>
}

// -----

// expected-error @+1 {{hgraph-autodiff: cannot add @taken_fwd: a symbol of that name exists}}
hgraph.func @taken(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> {
  hgraph.return %h : !hgraph.node<4xf32>
}
hgraph.func @taken_fwd(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> attributes {hgraph.kind = "inference"} {
  hgraph.return %h : !hgraph.node<4xf32>
}
