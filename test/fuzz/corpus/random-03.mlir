hgraph.func @p3(%g: !hgraph.graph, %h0: !hgraph.node<5xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 5x1xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<node, 1x8xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<single, 1x8x8xf32> {hgraph.name = "W2"}, %W3: !hgraph.weight<single, 8x8xf32> {hgraph.name = "W3"}) -> (!hgraph.edge<1xf32>, !hgraph.node<5xf32>, !hgraph.weight<single, 8x8xf32>) {
  %v0 = hgraph.typed_linear %W0, %h0 from node : !hgraph.weight<single, 5x1xf32>, !hgraph.node<5xf32> -> !hgraph.node<1xf32>
  %v1 = hgraph.scale %v0, %h0 : !hgraph.node<1xf32>, !hgraph.node<5xf32> -> !hgraph.node<5xf32>
  %v2 = hgraph.typed_linear %W1, %v0 from dst : !hgraph.weight<node, 1x8xf32>, !hgraph.node<1xf32> -> !hgraph.edge<8xf32>
  %v3 = hgraph.edge_softmax %v2 : !hgraph.edge<8xf32>
  %v4 = hgraph.aggregate max %v2 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %v5 = hgraph.typed_linear %W2, %v4 from src transpose : !hgraph.weight<single, 1x8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %v6 = hgraph.weight_grad %v3 from edge, %v5 : !hgraph.edge<8xf32>, !hgraph.edge<8xf32> -> !hgraph.weight<single, 8x8xf32>
  %v7 = hgraph.typed_linear %W3, %v4 from dst : !hgraph.weight<single, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %v8 = hgraph.sub %v5, %v7 : !hgraph.edge<8xf32>
  %v9 = hgraph.dot %v8, %v7 : !hgraph.edge<8xf32> -> !hgraph.edge<1xf32>
  %v10 = hgraph.tanh %v5 : !hgraph.edge<8xf32>
  %v11 = hgraph.add %v5, %v10 : !hgraph.edge<8xf32>
  %v12 = hgraph.edge_softmax %v9 : !hgraph.edge<1xf32>
  %v13 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  hgraph.return %v13, %v1, %v6 : !hgraph.edge<1xf32>, !hgraph.node<5xf32>, !hgraph.weight<single, 8x8xf32>
}
