hgraph.func @from_node_edge_input(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %w: !hgraph.weight<single, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %x from node : !hgraph.weight<single, 8x8xf32>, !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
