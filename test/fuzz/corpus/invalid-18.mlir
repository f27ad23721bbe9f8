hgraph.func @from_edge_node_input(%g: !hgraph.graph, %x: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %x from edge : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
