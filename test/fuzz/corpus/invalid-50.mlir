hgraph.func @dot_operands(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.edge<16xf32>) {
  %0 = "hgraph.dot"(%x, %y) : (!hgraph.edge<8xf32>, !hgraph.edge<16xf32>) -> !hgraph.edge<1xf32>
  hgraph.return
}
