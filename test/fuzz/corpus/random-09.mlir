hgraph.func @p9(%g: !hgraph.graph, %h0: !hgraph.node<2xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 1x8xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<node, 8x4xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<node, 1x4xf32> {hgraph.name = "W2"}, %x1: !hgraph.edge<8xf32, heads = 4> {hgraph.name = "x1"}, %h2: !hgraph.node<1xf32> {hgraph.name = "h2"}) -> !hgraph.node<8xf32, heads = 4> {
  %v0 = hgraph.slice %h0 offset 1 : !hgraph.node<2xf32> -> !hgraph.node<1xf32>
  %v1 = hgraph.typed_linear %W0, %v0 from src : !hgraph.weight<single, 1x8xf32>, !hgraph.node<1xf32> -> !hgraph.edge<8xf32, heads = 4>
  %v2 = hgraph.aggregate max %v1 : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v3 = hgraph.sigmoid %v2 : !hgraph.node<8xf32, heads = 4>
  %v4 = hgraph.typed_linear %W1, %v3 from src : !hgraph.weight<node, 8x4xf32>, !hgraph.node<8xf32, heads = 4> -> !hgraph.edge<4xf32, heads = 4>
  %v5 = hgraph.scale %v4, %v1 : !hgraph.edge<4xf32, heads = 4>, !hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  %v6 = hgraph.typed_linear %W2, %v0 from src : !hgraph.weight<node, 1x4xf32>, !hgraph.node<1xf32> -> !hgraph.edge<4xf32>
  %v7 = hgraph.leaky_relu_grad %x1, %v5 alpha 0.0 : !hgraph.edge<8xf32, heads = 4>
  %v8 = hgraph.aggregate max %v7 : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v9 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %v10 = hgraph.scale %v9, %v5 : !hgraph.edge<1xf32>, !hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  %v11 = hgraph.scale %h2, %v8 : !hgraph.node<1xf32>, !hgraph.node<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  hgraph.return %v11 : !hgraph.node<8xf32, heads = 4>
}
