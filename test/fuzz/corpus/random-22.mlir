hgraph.func @p22_t(%g: !hgraph.graph, %h0: !hgraph.node<1xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<edge, 1x2xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 2x1xf32> {hgraph.name = "W1"}, %W2: !hgraph.weight<node, 32x2xf32> {hgraph.name = "W2"}, %W3: !hgraph.weight<edge, 5xf32> {hgraph.name = "W3"}) -> (!hgraph.edge<5xf32>, !hgraph.node<32xf32>, !hgraph.node<2xf32>, !hgraph.node<1xf32>) {
  %v0 = hgraph.typed_linear %W0, %h0 from dst : !hgraph.weight<edge, 1x2xf32>, !hgraph.node<1xf32> -> !hgraph.edge<2xf32>
  %v1 = hgraph.aggregate max %v0 : !hgraph.edge<2xf32> -> !hgraph.node<2xf32>
  %v2 = hgraph.tanh %v0 : !hgraph.edge<2xf32>
  %v3 = hgraph.add %v0, %v2 : !hgraph.edge<2xf32>
  %v4 = hgraph.sigmoid %v3 : !hgraph.edge<2xf32>
  %v5 = hgraph.relu %v4 : !hgraph.edge<2xf32>
  %v6 = hgraph.typed_linear %W1, %v1 from dst : !hgraph.weight<single, 2x1xf32>, !hgraph.node<2xf32> -> !hgraph.edge<1xf32>
  %v7 = hgraph.concat %v4, %v0, %v6 : !hgraph.edge<2xf32>, !hgraph.edge<2xf32>, !hgraph.edge<1xf32> -> !hgraph.edge<5xf32>
  %v8 = hgraph.aggregate sum %v5 : !hgraph.edge<2xf32> -> !hgraph.node<2xf32>
  %v9 = hgraph.neg %v8 : !hgraph.node<2xf32>
  %v10 = hgraph.typed_linear %W2, %v8 from node transpose : !hgraph.weight<node, 32x2xf32>, !hgraph.node<2xf32> -> !hgraph.node<32xf32>
  %v11 = hgraph.typed_vector %W3 : !hgraph.weight<edge, 5xf32> -> !hgraph.edge<5xf32>
  %v12 = hgraph.mul %v7, %v11 : !hgraph.edge<5xf32>
  hgraph.return %v12, %v10, %v9, %h0 : !hgraph.edge<5xf32>, !hgraph.node<32xf32>, !hgraph.node<2xf32>, !hgraph.node<1xf32>
}
