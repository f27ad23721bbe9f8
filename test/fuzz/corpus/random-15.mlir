hgraph.func @p15(%g: !hgraph.graph, %h0: !hgraph.node<4xf32, heads = 2> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 4x4xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 4x2xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<single, 3xf32> {hgraph.name = "W2"}) -> (!hgraph.node<3xf32>, !hgraph.edge<4xf32, heads = 2>, !hgraph.node<2xf32, heads = 2>, !hgraph.node<6xf32, heads = 2>) {
  %v0 = hgraph.typed_linear %W0, %h0 from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32, heads = 2> -> !hgraph.node<4xf32, heads = 2>
  %v1 = hgraph.sub %h0, %v0 : !hgraph.node<4xf32, heads = 2>
  %v2 = hgraph.typed_linear %W1, %v0 from node : !hgraph.weight<single, 4x2xf32>, !hgraph.node<4xf32, heads = 2> -> !hgraph.node<2xf32, heads = 2>
  %v3 = hgraph.concat %v1, %v2 : !hgraph.node<4xf32, heads = 2>, !hgraph.node<2xf32, heads = 2> -> !hgraph.node<6xf32, heads = 2>
  %v4 = hgraph.slice %v1 offset 1 : !hgraph.node<4xf32, heads = 2> -> !hgraph.node<2xf32, heads = 2>
  %v5 = hgraph.gather %v0 from dst : !hgraph.node<4xf32, heads = 2> -> !hgraph.edge<4xf32, heads = 2>
  %v6 = hgraph.typed_vector %W2 : !hgraph.weight<single, 3xf32> -> !hgraph.node<3xf32>
  %v7 = hgraph.mul %v6, %v6 : !hgraph.node<3xf32>
  hgraph.return %v7, %v5, %v4, %v3 : !hgraph.node<3xf32>, !hgraph.edge<4xf32, heads = 2>, !hgraph.node<2xf32, heads = 2>, !hgraph.node<6xf32, heads = 2>
}
