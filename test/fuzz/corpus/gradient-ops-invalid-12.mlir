hgraph.func @leaky_grad_slope(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.leaky_relu_grad %x, %x alpha 0x7FF0000000000000 : !hgraph.edge<8xf32>
  hgraph.return
}
