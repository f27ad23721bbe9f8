hgraph.func @concat_heads(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.edge<8xf32, heads = 2>) {
  %0 = hgraph.concat %x, %y : !hgraph.edge<8xf32>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<16xf32>
  hgraph.return
}
