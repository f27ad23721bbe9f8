hgraph.func @vector_element_type(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8xf32>) {
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xbf16>
  hgraph.return
}
