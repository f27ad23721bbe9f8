hgraph.func @linear_per_head(%g: !hgraph.graph, %x: !hgraph.node<64xf32, heads = 2>, %w: !hgraph.weight<edge, 4x16x16xf32>) {
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 4x16x16xf32>, !hgraph.node<64xf32, heads = 2> -> !hgraph.edge<64xf32, heads = 4>
  hgraph.return
}
