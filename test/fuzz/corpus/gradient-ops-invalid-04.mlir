hgraph.func @weight_grad_width(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.edge<4xf32>) {
  %0 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x5xf32>
  hgraph.return
}
