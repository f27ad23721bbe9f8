hgraph.func @attention(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                       %W: !hgraph.weight<edge, 8x4xf32>, %a: !hgraph.weight<edge, 4xf32>) -> !hgraph.node<4xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32>
  %s = hgraph.dot %z, %av : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  %l = hgraph.leaky_relu %s alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %l : !hgraph.edge<1xf32>
  %m = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}
