hgraph.func @slice_range(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>) {
  %0 = hgraph.slice %x offset 3 : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<4xf32, heads = 2>
  hgraph.return
}
