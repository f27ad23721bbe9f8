hgraph.func @gradients(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                       %dz: !hgraph.edge<4xf32>, %da: !hgraph.edge<2xf32, heads = 2>,
                       %x: !hgraph.edge<2xf32, heads = 2>,
                       %W: !hgraph.weight<edge, 8x4xf32>,
                       %K: !hgraph.weight<node, 2x4x2xf32>,
                       %hk: !hgraph.node<8xf32, heads = 2>,
                       %dk: !hgraph.node<4xf32, heads = 2>) {
  %0 = hgraph.typed_linear %W, %dz from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<8xf32>
  %1 = hgraph.aggregate sum %0 to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %2 = hgraph.aggregate sum %0 to dst : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %3 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %4 = hgraph.weight_grad %hk from node, %dk : !hgraph.node<8xf32, heads = 2>, !hgraph.node<4xf32, heads = 2> -> !hgraph.weight<node, 2x4x2xf32>
  %5 = hgraph.type_sum %dz : !hgraph.edge<4xf32> -> !hgraph.weight<edge, 4xf32>
  %6 = hgraph.zeros : !hgraph.weight<edge, 8x4xf32>
  %7 = hgraph.zeros : !hgraph.node<8xf32>
  %8 = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %9 = hgraph.slice %x offset 0 : !hgraph.edge<2xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %10 = hgraph.slice %0 offset 1 : !hgraph.edge<8xf32> -> !hgraph.edge<3xf32>
  %11 = hgraph.equal %x, %da : !hgraph.edge<2xf32, heads = 2>
  %12 = hgraph.leaky_relu_grad %da, %x alpha 2.000000e-01 : !hgraph.edge<2xf32, heads = 2>
  %13 = hgraph.add %3, %6 : !hgraph.weight<edge, 8x4xf32>
  hgraph.return
}
