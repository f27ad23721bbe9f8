hgraph.func @transpose_widths(%g: !hgraph.graph, %dz: !hgraph.edge<8xf32>, %W: !hgraph.weight<edge, 8x4xf32>) {
  %0 = hgraph.typed_linear %W, %dz from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<4xf32>
  hgraph.return
}
