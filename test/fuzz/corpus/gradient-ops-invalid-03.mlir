hgraph.func @weight_grad_domain(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.node<4xf32>) {
  %0 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.node<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  hgraph.return
}
