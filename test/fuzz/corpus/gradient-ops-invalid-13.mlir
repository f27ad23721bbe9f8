hgraph.func @leaky_grad_types(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.edge<4xf32>) {
  %0 = "hgraph.leaky_relu_grad"(%x, %y) {alpha = 0.0 : f64} : (!hgraph.edge<8xf32>, !hgraph.edge<4xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}
