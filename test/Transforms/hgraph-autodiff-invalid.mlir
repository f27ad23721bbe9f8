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

// -----

// A compact argument's gradient would be a sum per (source, edge type) pair.
hgraph.func @compact_argument(%g: !hgraph.graph,
    // expected-error @+1 {{hgraph-autodiff: argument 'x' has compact materialization (one row per unique (source, edge type) pair); its gradient is not supported yet}}
    %x: !hgraph.edge<4xf32> {hgraph.name = "x", hgraph.materialization = #hgraph.materialization<compact>})
    -> !hgraph.node<4xf32> {
  %o = hgraph.aggregate sum %x : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}

// -----

// A compact result's cotangent must count once per pair, not once per edge.
// expected-error @+1 {{hgraph-autodiff: result #0 has compact materialization (one row per unique (source, edge type) pair) and depends on a differentiated argument}}
hgraph.func @compact_result(%g: !hgraph.graph, %h: !hgraph.node<4xf32>)
    -> (!hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>}) {
  %z = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  hgraph.return %z : !hgraph.edge<4xf32>
}

// -----

// An op without a vector-Jacobian rule (no VJPOpInterface) on the gradient's
// path is reported, not skipped.
hgraph.func @no_rule(%g: !hgraph.graph, %x: !hgraph.node<4xf32>) -> !hgraph.node<2xf32> {
  // expected-error @+1 {{hgraph-autodiff: no gradient rule for 'hgraph.slice'}}
  %y = hgraph.slice %x offset 1 : !hgraph.node<4xf32> -> !hgraph.node<2xf32>
  hgraph.return %y : !hgraph.node<2xf32>
}

// -----

// The gradient ops have no rule of their own: no second derivatives.
hgraph.func @second_derivative(%g: !hgraph.graph, %dy: !hgraph.node<4xf32>, %x: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> {
  // expected-error @+1 {{hgraph-autodiff: no gradient rule for 'hgraph.gelu_grad'}}
  %dx = hgraph.gelu_grad %dy, %x : !hgraph.node<4xf32>
  hgraph.return %dx : !hgraph.node<4xf32>
}

// -----

hgraph.func @transposed_at_endpoint(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<edge, 8x4xf32>) -> !hgraph.edge<8xf32> {
  // expected-error @+1 {{hgraph-autodiff: no gradient rule for the weight of a transposed typed_linear read at an edge endpoint}}
  %y = hgraph.typed_linear %W, %h from src transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<8xf32>
  hgraph.return %y : !hgraph.edge<8xf32>
}
