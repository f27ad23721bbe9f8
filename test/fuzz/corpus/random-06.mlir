hgraph.func @p6_t(%g: !hgraph.graph, %h0: !hgraph.node<4xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 1x4xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 4x16xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<single, 1x16x8xf32> {hgraph.name = "W2"}) -> (!hgraph.edge<16xf32>, !hgraph.node<4xf32>, !hgraph.edge<8xf32>) {
  %v0 = hgraph.typed_linear %W0, %h0 from node transpose : !hgraph.weight<single, 1x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<1xf32>
  %v1 = hgraph.scale %v0, %h0 : !hgraph.node<1xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  %v2 = hgraph.gather %v1 from dst : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %v3 = hgraph.typed_linear %W1, %v1 from dst : !hgraph.weight<single, 4x16xf32>, !hgraph.node<4xf32> -> !hgraph.edge<16xf32>
  %v4 = hgraph.aggregate mean %v2 : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %v5 = hgraph.typed_linear %W2, %v3 from edge : !hgraph.weight<single, 1x16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  %v6 = hgraph.leaky_relu %v3 alpha -0.3 : !hgraph.edge<16xf32>
  %v7 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %v8 = hgraph.scale %v7, %v6 : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %v9 = hgraph.sigmoid %v4 : !hgraph.node<4xf32>
  %v10 = hgraph.sigmoid %v8 : !hgraph.edge<16xf32>
  hgraph.return %v10, %v9, %v5 : !hgraph.edge<16xf32>, !hgraph.node<4xf32>, !hgraph.edge<8xf32>
}
