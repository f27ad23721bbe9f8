hgraph.func @one_column_scale(%g: !hgraph.graph, %s: !hgraph.edge<1xf32>, %x: !hgraph.edge<4xf32, heads = 2>) -> !hgraph.edge<4xf32, heads = 2> {
  %y = hgraph.scale %s, %x : !hgraph.edge<1xf32>, !hgraph.edge<4xf32, heads = 2> -> !hgraph.edge<4xf32, heads = 2>
  hgraph.return %y : !hgraph.edge<4xf32, heads = 2>
}
