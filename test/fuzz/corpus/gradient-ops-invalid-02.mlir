hgraph.func @to_edge(%g: !hgraph.graph, %m: !hgraph.edge<8xf32>) {
  %0 = hgraph.aggregate sum %m to edge : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
