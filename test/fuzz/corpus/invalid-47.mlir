hgraph.func @softmax_nodes(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) {
  %0 = hgraph.edge_softmax %h : !hgraph.node<4xf32>
  hgraph.return
}
