hgraph.func @node_weight_on_edges(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %w: !hgraph.weight<node, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %x from edge : !hgraph.weight<node, 8x8xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
