hgraph.func @missing_endpoint(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = "hgraph.typed_linear"(%w, %h) : (!hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}
