hgraph.func @slice_heads(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>) {
  %0 = hgraph.slice %x offset 0 : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<4xf32>
  hgraph.return
}
