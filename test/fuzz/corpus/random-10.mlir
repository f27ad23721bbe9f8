hgraph.func @p10_t(%g: !hgraph.graph, %h0: !hgraph.node<5xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 5x2xf32> {hgraph.name = "W0"}, %h1: !hgraph.node<2xf32> {hgraph.name = "h1"}, %W1: !hgraph.weight<single, 1x1xf32> {hgraph.name = "W1"}) -> (!hgraph.node<1xf32>, !hgraph.edge<1xf32>, !hgraph.node<7xf32>) {
  %v0 = hgraph.typed_linear %W0, %h0 from node : !hgraph.weight<node, 5x2xf32>, !hgraph.node<5xf32> -> !hgraph.node<2xf32>
  %v1 = hgraph.concat %h0, %v0 : !hgraph.node<5xf32>, !hgraph.node<2xf32> -> !hgraph.node<7xf32>
  %v2 = hgraph.dot %v0, %h1 : !hgraph.node<2xf32> -> !hgraph.node<1xf32>
  %v3 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %v4 = hgraph.tanh %v2 : !hgraph.node<1xf32>
  %v5 = hgraph.tanh %v4 : !hgraph.node<1xf32>
  %v6 = hgraph.exp %v5 : !hgraph.node<1xf32>
  %v7 = hgraph.div %v2, %v6 : !hgraph.node<1xf32>
  %v8 = hgraph.scale %v4, %v6 : !hgraph.node<1xf32>, !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  %v9 = hgraph.typed_linear %W1, %v5 from node transpose : !hgraph.weight<single, 1x1xf32>, !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  %v10 = hgraph.scale %v9, %v8 : !hgraph.node<1xf32>, !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  hgraph.return %v10, %v3, %v1 : !hgraph.node<1xf32>, !hgraph.edge<1xf32>, !hgraph.node<7xf32>
}
