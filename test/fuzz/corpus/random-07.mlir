hgraph.func @p7(%g: !hgraph.graph, %h0: !hgraph.node<4xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 4x8xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 4x2x2xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<single, 4x8xf32> {hgraph.name = "W2"}, %W3: !hgraph.weight<single, 8x5xf32> {hgraph.name = "W3"}, %W4: !hgraph.weight<edge, 8x6xf32> {hgraph.name = "W4"}) -> (!hgraph.edge<1xf32> {hgraph.materialization = #hgraph.materialization<compact>}, !hgraph.edge<6xf32>, !hgraph.edge<8xf32, heads = 4>) {
  %v0 = hgraph.typed_linear %W0, %h0 from dst : !hgraph.weight<node, 4x8xf32>, !hgraph.node<4xf32> -> !hgraph.edge<8xf32, heads = 4>
  %v1 = hgraph.aggregate sum %v0 to src : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v2 = hgraph.typed_linear %W1, %v1 from node : !hgraph.weight<single, 4x2x2xf32>, !hgraph.node<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v3 = hgraph.edge_softmax %v0 : !hgraph.edge<8xf32, heads = 4>
  %v4 = hgraph.weight_product %W2, %W3 : !hgraph.weight<single, 4x8xf32>, !hgraph.weight<single, 8x5xf32> -> !hgraph.weight<single, 4x5xf32>
  %v5 = hgraph.typed_linear %v4, %h0 from src : !hgraph.weight<single, 4x5xf32>, !hgraph.node<4xf32> -> !hgraph.edge<5xf32>
  %v6 = hgraph.typed_linear %W4, %v2 from dst : !hgraph.weight<edge, 8x6xf32>, !hgraph.node<8xf32, heads = 4> -> !hgraph.edge<6xf32>
  %v7 = hgraph.dot %v5, %v5 : !hgraph.edge<5xf32> -> !hgraph.edge<1xf32>
  hgraph.return %v7, %v6, %v3 : !hgraph.edge<1xf32>, !hgraph.edge<6xf32>, !hgraph.edge<8xf32, heads = 4>
}
