hgraph.func @vector_node_on_edges(%g: !hgraph.graph, %w: !hgraph.weight<node, 8xf32>) {
  %0 = hgraph.typed_vector %w : !hgraph.weight<node, 8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
