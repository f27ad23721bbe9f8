hgraph.func @linear_input_width(%g: !hgraph.graph, %x: !hgraph.node<32xf32>, %w: !hgraph.weight<edge, 64x64xf32>) {
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32>
  hgraph.return
}
