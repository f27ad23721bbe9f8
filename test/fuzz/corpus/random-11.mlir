hgraph.func @p11(%g: !hgraph.graph, %h0: !hgraph.node<6xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 6x4xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<edge, 4x1xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<single, 1x8xf32> {hgraph.name = "W2"}) -> !hgraph.edge<1xf32> {
  %v0 = hgraph.typed_linear %W0, %h0 from src : !hgraph.weight<node, 6x4xf32>, !hgraph.node<6xf32> -> !hgraph.edge<4xf32>
  %v1 = hgraph.leaky_relu_grad %v0, %v0 alpha 0.0 : !hgraph.edge<4xf32>
  %v2 = hgraph.typed_linear %W1, %v0 from edge : !hgraph.weight<edge, 4x1xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  %v3 = hgraph.const_scale %v2 by -0.75 : !hgraph.edge<1xf32>
  %v4 = hgraph.typed_linear %W2, %v3 from edge : !hgraph.weight<single, 1x8xf32>, !hgraph.edge<1xf32> -> !hgraph.edge<8xf32>
  %v5 = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  hgraph.return %v5 : !hgraph.edge<1xf32>
}
