hgraph.func @unknown_attribute(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.exp %x {hgraph.layout = 1 : i32} : !hgraph.edge<8xf32>
  hgraph.return
}
