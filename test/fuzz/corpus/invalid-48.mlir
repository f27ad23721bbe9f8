hgraph.func @dot_domain(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.dot %x, %x : !hgraph.edge<8xf32> -> !hgraph.node<1xf32>
  hgraph.return
}
