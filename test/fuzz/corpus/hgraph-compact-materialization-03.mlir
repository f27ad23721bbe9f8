hgraph.func @rgcn_bwd(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %W: !hgraph.weight<edge, 16x16xf32>,
                      %dout: !hgraph.node<16xf32>) -> (!hgraph.edge<16xf32>, !hgraph.node<16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<single, 16x16xf32>) {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %d = hgraph.gather %dout from dst : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %dx = hgraph.typed_linear %W, %d from edge transpose : !hgraph.weight<edge, 16x16xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %dh = hgraph.aggregate sum %dx to src : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  %dW = hgraph.weight_grad %h from src, %d : !hgraph.node<16xf32>, !hgraph.edge<16xf32> -> !hgraph.weight<edge, 16x16xf32>
  %dWt = hgraph.weight_grad %h from dst, %d : !hgraph.node<16xf32>, !hgraph.edge<16xf32> -> !hgraph.weight<edge, 16x16xf32>
  %dW0 = hgraph.weight_grad %h from node, %dout : !hgraph.node<16xf32>, !hgraph.node<16xf32> -> !hgraph.weight<single, 16x16xf32>
  hgraph.return %z, %dh, %dW, %dWt, %dW0 : !hgraph.edge<16xf32>, !hgraph.node<16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<single, 16x16xf32>
}
