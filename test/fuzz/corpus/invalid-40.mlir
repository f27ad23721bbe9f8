hgraph.func @gather_from_node(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  %0 = hgraph.gather %h from node : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
