// RUN: hector-opt %s -split-input-file -verify-diagnostics

hgraph.func @transpose_widths(%g: !hgraph.graph, %dz: !hgraph.edge<8xf32>, %W: !hgraph.weight<edge, 8x4xf32>) {
  // expected-error @+1 {{input width 8 does not match the weight's output width 4}}
  %0 = hgraph.typed_linear %W, %dz from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<4xf32>
  hgraph.return
}

// -----

hgraph.func @to_src_mean(%g: !hgraph.graph, %m: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{'to src' supports the 'sum' reduction only, got 'mean'}}
  %0 = hgraph.aggregate mean %m to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @to_edge(%g: !hgraph.graph, %m: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{reduces into the 'src' or 'dst' node of each edge, got 'edge'}}
  %0 = hgraph.aggregate sum %m to edge : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @weight_grad_domain(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.node<4xf32>) {
  // expected-error @+1 {{'from src' maps rows to an edge-wise gradient, got node-wise}}
  %0 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.node<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  hgraph.return
}

// -----

hgraph.func @weight_grad_width(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.edge<4xf32>) {
  // expected-error @+1 {{gradient width 4 does not match the weight's output width 5}}
  %0 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x5xf32>
  hgraph.return
}

// -----

hgraph.func @weight_grad_node_rows(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.node<4xf32>) {
  // expected-error @+1 {{an edge-typed weight cannot be applied to node rows}}
  %0 = hgraph.weight_grad %h from node, %dz : !hgraph.node<8xf32>, !hgraph.node<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  hgraph.return
}

// -----

hgraph.func @type_sum_domain(%g: !hgraph.graph, %d: !hgraph.node<4xf32>) {
  // expected-error @+1 {{an edge-typed weight pairs with an edge-wise value, got '!hgraph.node<4xf32>'}}
  %0 = hgraph.type_sum %d : !hgraph.node<4xf32> -> !hgraph.weight<edge, 4xf32>
  hgraph.return
}

// -----

hgraph.func @type_sum_matrix(%g: !hgraph.graph, %d: !hgraph.edge<4xf32>) {
  // expected-error @+1 {{needs a vector weight [n], got '!hgraph.weight<edge, 4x4xf32>'}}
  %0 = hgraph.type_sum %d : !hgraph.edge<4xf32> -> !hgraph.weight<edge, 4x4xf32>
  hgraph.return
}

// -----

hgraph.func @degree_norm_width(%g: !hgraph.graph) {
  // expected-error @+1 {{produces one scalar per edge (width 1), got width 2}}
  %0 = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<2xf32>
  hgraph.return
}

// -----

hgraph.func @slice_range(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>) {
  // expected-error @+1 {{columns 3 .. 4 of each head block are out of range: the input has 4 per head}}
  %0 = hgraph.slice %x offset 3 : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<4xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @slice_heads(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>) {
  // expected-error @+1 {{must have the domain, element type and heads of the input}}
  %0 = hgraph.slice %x offset 0 : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<4xf32>
  hgraph.return
}

// -----

hgraph.func @slice_negative(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{attribute 'offset' failed to satisfy constraint}}
  %0 = "hgraph.slice"(%x) {offset = -1 : i64} : (!hgraph.edge<8xf32>) -> !hgraph.edge<4xf32>
  hgraph.return
}

// -----

hgraph.func @leaky_grad_slope(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{negative slope must be finite}}
  %0 = hgraph.leaky_relu_grad %x, %x alpha 0x7FF0000000000000 : !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @leaky_grad_types(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.edge<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {grad, input, result} have same type}}
  %0 = "hgraph.leaky_relu_grad"(%x, %y) {alpha = 0.0 : f64} : (!hgraph.edge<8xf32>, !hgraph.edge<4xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @gelu_grad_types(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.node<8xf32>) {
  // expected-error @+1 {{failed to verify that all of {grad, input, result} have same type}}
  %0 = "hgraph.gelu_grad"(%x, %y) : (!hgraph.edge<8xf32>, !hgraph.node<8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}
