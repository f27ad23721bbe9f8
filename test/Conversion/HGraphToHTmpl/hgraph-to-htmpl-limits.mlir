// RUN: hector-opt %s --hgraph-to-htmpl -split-input-file -verify-diagnostics

// Feature widths and weight dimensions above 16384 are refused where they
// appear (docs/compilation.md#limits): the generated code grows with them.

hgraph.func @wide_input(%g: !hgraph.graph,
    // expected-error @+1 {{hgraph-to-htmpl: feature width 1048576 exceeds 16384, the largest Hector compiles (docs/compilation.md#limits)}}
    %h: !hgraph.node<1048576xf32>) -> !hgraph.node<1048576xf32> {
  hgraph.return %h : !hgraph.node<1048576xf32>
}

// -----

hgraph.func @wide_result(%g: !hgraph.graph) -> !hgraph.node<16385xf32> {
  // expected-error @+1 {{hgraph-to-htmpl: feature width 16385 exceeds 16384}}
  %z = hgraph.zeros : !hgraph.node<16385xf32>
  hgraph.return %z : !hgraph.node<16385xf32>
}

// -----

hgraph.func @wide_weight(%g: !hgraph.graph,
    // expected-error @+1 {{hgraph-to-htmpl: weight dimension 65536 exceeds 16384}}
    %a: !hgraph.weight<edge, 65536xf32>) {
  hgraph.return
}

// -----

// At the limit: lowered.
hgraph.func @at_limit(%g: !hgraph.graph, %h: !hgraph.node<16384xf32>,
                      %a: !hgraph.weight<edge, 16384xf32>) -> !hgraph.node<16384xf32> {
  hgraph.return %h : !hgraph.node<16384xf32>
}
