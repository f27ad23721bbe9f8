hgraph.func @dot_width(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>) {
  %0 = hgraph.dot %x, %x : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  hgraph.return
}
