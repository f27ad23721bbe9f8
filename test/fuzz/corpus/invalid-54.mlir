hgraph.func @scale_columns(%g: !hgraph.graph, %s: !hgraph.edge<2xf32, heads = 2>, %x: !hgraph.edge<8xf32, heads = 4>) {
  %0 = hgraph.scale %s, %x : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  hgraph.return
}
