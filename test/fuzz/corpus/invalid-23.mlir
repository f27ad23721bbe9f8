hgraph.func @linear_output_width(%g: !hgraph.graph, %x: !hgraph.node<64xf32>, %w: !hgraph.weight<edge, 64x32xf32>) {
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 64x32xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  hgraph.return
}
