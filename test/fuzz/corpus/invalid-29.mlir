hgraph.func @vector_width(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8xf32>) {
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<16xf32>
  hgraph.return
}
