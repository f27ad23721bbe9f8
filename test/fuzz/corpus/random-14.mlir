hgraph.func @p14_t(%g: !hgraph.graph, %h0: !hgraph.node<32xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 32x1xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<node, 32x8xf32> {hgraph.name = "W1"}) -> (!hgraph.edge<32xf32>, !hgraph.edge<32xf32>, !hgraph.node<8xf32>, !hgraph.edge<32xf32>) {
  %v0 = hgraph.exp %h0 : !hgraph.node<32xf32>
  %v1 = hgraph.typed_linear %W0, %h0 from dst : !hgraph.weight<single, 32x1xf32>, !hgraph.node<32xf32> -> !hgraph.edge<1xf32>
  %v2 = hgraph.edge_softmax %v1 : !hgraph.edge<1xf32>
  %v3 = hgraph.gather %v0 from dst : !hgraph.node<32xf32> -> !hgraph.edge<32xf32>
  %v4 = hgraph.typed_linear %W1, %h0 from node : !hgraph.weight<node, 32x8xf32>, !hgraph.node<32xf32> -> !hgraph.node<8xf32>
  %v5 = hgraph.gather %v0 from dst : !hgraph.node<32xf32> -> !hgraph.edge<32xf32>
  %v6 = hgraph.gather %h0 from dst : !hgraph.node<32xf32> -> !hgraph.edge<32xf32>
  hgraph.return %v6, %v5, %v4, %v3 : !hgraph.edge<32xf32>, !hgraph.edge<32xf32>, !hgraph.node<8xf32>, !hgraph.edge<32xf32>
}
