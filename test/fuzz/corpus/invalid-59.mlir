hgraph.func @leaky_relu_slope(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.leaky_relu %x alpha 0x7FF0000000000000 : !hgraph.edge<8xf32>
  hgraph.return
}
