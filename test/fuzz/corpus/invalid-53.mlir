hgraph.func @scale_not_per_head(%g: !hgraph.graph, %s: !hgraph.edge<4xf32>, %x: !hgraph.edge<8xf32, heads = 4>) {
  %0 = hgraph.scale %s, %x : !hgraph.edge<4xf32>, !hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  hgraph.return
}
