hgraph.func @to_src_mean(%g: !hgraph.graph, %m: !hgraph.edge<8xf32>) {
  %0 = hgraph.aggregate mean %m to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
