hgraph.func @vector_edge_on_nodes(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8xf32>) {
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
