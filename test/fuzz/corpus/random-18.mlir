hgraph.func @p18_t(%g: !hgraph.graph, %h0: !hgraph.node<2xf32, heads = 2> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 4xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<node, 2x1x2xf32> {hgraph.name = "W1"}, %x1: !hgraph.edge<5xf32> {hgraph.name = "x1"}) -> (!hgraph.node<5xf32>, !hgraph.node<5xf32>) {
  %v0 = hgraph.typed_vector %W0 : !hgraph.weight<single, 4xf32> -> !hgraph.node<4xf32, heads = 2>
  %v1 = hgraph.typed_linear %W1, %h0 from node : !hgraph.weight<node, 2x1x2xf32>, !hgraph.node<2xf32, heads = 2> -> !hgraph.node<4xf32, heads = 2>
  %v2 = hgraph.add %v1, %v0 : !hgraph.node<4xf32, heads = 2>
  %v3 = hgraph.aggregate sum %x1 to src : !hgraph.edge<5xf32> -> !hgraph.node<5xf32>
  %v4 = hgraph.edge_softmax %x1 : !hgraph.edge<5xf32>
  %v5 = hgraph.aggregate mean %v4 : !hgraph.edge<5xf32> -> !hgraph.node<5xf32>
  hgraph.return %v5, %v3 : !hgraph.node<5xf32>, !hgraph.node<5xf32>
}
