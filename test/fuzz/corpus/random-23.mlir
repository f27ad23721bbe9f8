hgraph.func @p23(%g: !hgraph.graph, %h0: !hgraph.node<4xf32, heads = 2> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 2x2x2xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 4x8xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<node, 8x2xf32> {hgraph.name = "W2"}) -> !hgraph.node<6xf32, heads = 2> {
  %v0 = hgraph.typed_linear %W0, %h0 from node : !hgraph.weight<single, 2x2x2xf32>, !hgraph.node<4xf32, heads = 2> -> !hgraph.node<4xf32, heads = 2>
  %v1 = hgraph.typed_linear %W1, %h0 from src : !hgraph.weight<single, 4x8xf32>, !hgraph.node<4xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 4>
  %v2 = hgraph.aggregate mean %v1 : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v3 = hgraph.typed_linear %W2, %v2 from node : !hgraph.weight<node, 8x2xf32>, !hgraph.node<8xf32, heads = 4> -> !hgraph.node<2xf32, heads = 2>
  %v4 = hgraph.concat %v0, %v3 : !hgraph.node<4xf32, heads = 2>, !hgraph.node<2xf32, heads = 2> -> !hgraph.node<6xf32, heads = 2>
  hgraph.return %v4 : !hgraph.node<6xf32, heads = 2>
}
