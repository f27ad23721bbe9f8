hgraph.func @binary_types(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.node<8xf32>) {
  %0 = "hgraph.add"(%x, %y) : (!hgraph.edge<8xf32>, !hgraph.node<8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}
