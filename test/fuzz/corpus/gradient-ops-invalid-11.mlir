hgraph.func @slice_negative(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = "hgraph.slice"(%x) {offset = -1 : i64} : (!hgraph.edge<8xf32>) -> !hgraph.edge<4xf32>
  hgraph.return
}
