// RUN: hector-opt %s --hgraph-to-htmpl -split-input-file -verify-diagnostics

hgraph.func @node_weight_from_src(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.edge<4xf32>) -> !hgraph.weight<node, 8x4xf32> {
  // expected-error @+1 {{hgraph-to-htmpl: the gradient of a node-typed weight read 'from src' is not lowered; aggregate the gradient to the node first and use 'from node'}}
  %0 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<node, 8x4xf32>
  hgraph.return %0 : !hgraph.weight<node, 8x4xf32>
}

// -----

hgraph.func @argument_role(%g: !hgraph.graph,
    // expected-error @+1 {{hgraph-to-htmpl: 'hgraph.role' of argument 'h' must be one of "input", "weight", "saved", "grad_output"; got "grad"}}
    %h: !hgraph.node<8xf32> {hgraph.name = "h", hgraph.role = "grad"}) {
  hgraph.return
}

// -----

// expected-error @+1 {{hgraph-to-htmpl: 'hgraph.role' of result 'result0' must be one of "output", "saved", "grad"; got 3 : i64}}
hgraph.func @result_role(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) -> (!hgraph.node<8xf32> {hgraph.role = 3}) {
  hgraph.return %h : !hgraph.node<8xf32>
}

// -----

// expected-error @+1 {{hgraph-to-htmpl: argument 'h' has compact materialization but is not edge-wise: '!hgraph.node<8xf32>'}}
hgraph.func @compact_node(%g: !hgraph.graph,
    %h: !hgraph.node<8xf32> {hgraph.name = "h", hgraph.materialization = #hgraph.materialization<compact>}) {
  hgraph.return
}

// -----

hgraph.func @compact_result(%g: !hgraph.graph, %h: !hgraph.node<8xf32>)
    -> (!hgraph.edge<8xf32> {hgraph.materialization = #hgraph.materialization<compact>}) {
  // expected-error @+1 {{hgraph-to-htmpl: a result with compact materialization must depend only on the source node and the edge type}}
  %0 = hgraph.gather %h from dst : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return %0 : !hgraph.edge<8xf32>
}

// -----

// expected-error @+1 {{'hgraph.kind' must be inference, training_forward or training_backward, got 'backward'}}
hgraph.func @kind(%g: !hgraph.graph) attributes {hgraph.kind = "backward"} {
  hgraph.return
}

// -----

// expected-error @+1 {{'hgraph.primal' must be a string on an hgraph.func}}
hgraph.func @primal(%g: !hgraph.graph) attributes {hgraph.primal = @kind} {
  hgraph.return
}

// -----

hgraph.func @kind_on_op(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  // expected-error @+1 {{'hgraph.kind' must be a string on an hgraph.func}}
  %0 = hgraph.relu %h {hgraph.kind = "inference"} : !hgraph.node<8xf32>
  hgraph.return
}
