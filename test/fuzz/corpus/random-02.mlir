hgraph.func @p2_t(%g: !hgraph.graph, %h0: !hgraph.node<5xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 5x32xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 2x16x2xf32> {hgraph.name = "W1"}) -> (!hgraph.edge<32xf32, heads = 2>, !hgraph.edge<32xf32, heads = 2>, !hgraph.node<36xf32, heads = 2>, !hgraph.node<32xf32, heads = 2>) {
  %v0 = hgraph.typed_linear %W0, %h0 from src : !hgraph.weight<node, 5x32xf32>, !hgraph.node<5xf32> -> !hgraph.edge<32xf32, heads = 2>
  %v1 = hgraph.aggregate sum %v0 : !hgraph.edge<32xf32, heads = 2> -> !hgraph.node<32xf32, heads = 2>
  %v2 = hgraph.aggregate sum %v0 : !hgraph.edge<32xf32, heads = 2> -> !hgraph.node<32xf32, heads = 2>
  %v3 = hgraph.gather %v2 from dst : !hgraph.node<32xf32, heads = 2> -> !hgraph.edge<32xf32, heads = 2>
  %v4 = hgraph.tanh %v2 : !hgraph.node<32xf32, heads = 2>
  %v5 = hgraph.mul %v2, %v4 : !hgraph.node<32xf32, heads = 2>
  %v6 = hgraph.aggregate max %v3 : !hgraph.edge<32xf32, heads = 2> -> !hgraph.node<32xf32, heads = 2>
  %v7 = hgraph.typed_linear %W1, %v6 from node : !hgraph.weight<single, 2x16x2xf32>, !hgraph.node<32xf32, heads = 2> -> !hgraph.node<4xf32, heads = 2>
  %v8 = hgraph.concat %v6, %v7 : !hgraph.node<32xf32, heads = 2>, !hgraph.node<4xf32, heads = 2> -> !hgraph.node<36xf32, heads = 2>
  %v9 = hgraph.edge_softmax %v3 : !hgraph.edge<32xf32, heads = 2>
  %v10 = hgraph.gather %v4 from dst : !hgraph.node<32xf32, heads = 2> -> !hgraph.edge<32xf32, heads = 2>
  hgraph.return %v10, %v9, %v8, %v5 : !hgraph.edge<32xf32, heads = 2>, !hgraph.edge<32xf32, heads = 2>, !hgraph.node<36xf32, heads = 2>, !hgraph.node<32xf32, heads = 2>
}
