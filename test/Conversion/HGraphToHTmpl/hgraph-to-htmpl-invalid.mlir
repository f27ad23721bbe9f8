// RUN: hector-opt %s --hgraph-to-htmpl -split-input-file -verify-diagnostics

hgraph.func @weight_product(%g: !hgraph.graph, %W: !hgraph.weight<edge, 8x8xf32>, %a: !hgraph.weight<edge, 8xf32>) -> !hgraph.weight<edge, 8xf32> {
  // expected-error @+1 {{hgraph-to-htmpl: weight products are not lowered yet}}
  %0 = hgraph.weight_product %W, %a : !hgraph.weight<edge, 8x8xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return %0 : !hgraph.weight<edge, 8xf32>
}

