hgraph.func @vector_of_matrix(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8x8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
