hgraph.func @edge_weight_on_nodes(%g: !hgraph.graph, %x: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %x from node : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
