hgraph.func @p0_t(%g: !hgraph.graph, %h0: !hgraph.node<5xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 5x12xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<edge, 12x6xf32> {hgraph.name = "W1"}, %h1: !hgraph.node<6xf32> {hgraph.name = "h1"}, %W2: !hgraph.weight<node, 6x6xf32> {hgraph.name = "W2"}) -> (!hgraph.node<12xf32>, !hgraph.node<1xf32>) {
  %v0 = hgraph.typed_linear %W0, %h0 from node : !hgraph.weight<single, 5x12xf32>, !hgraph.node<5xf32> -> !hgraph.node<12xf32>
  %v1 = hgraph.typed_linear %W1, %v0 from src : !hgraph.weight<edge, 12x6xf32>, !hgraph.node<12xf32> -> !hgraph.edge<6xf32>
  %v2 = hgraph.aggregate mean %v1 : !hgraph.edge<6xf32> -> !hgraph.node<6xf32>
  %v3 = hgraph.sub %v2, %h1 : !hgraph.node<6xf32>
  %v4 = hgraph.gather %v0 from dst : !hgraph.node<12xf32> -> !hgraph.edge<12xf32>
  %v5 = hgraph.typed_linear %W2, %v3 from node : !hgraph.weight<node, 6x6xf32>, !hgraph.node<6xf32> -> !hgraph.node<6xf32>
  %v6 = hgraph.dot %h1, %v5 : !hgraph.node<6xf32> -> !hgraph.node<1xf32>
  %v7 = hgraph.aggregate mean %v4 : !hgraph.edge<12xf32> -> !hgraph.node<12xf32>
  hgraph.return %v7, %v6 : !hgraph.node<12xf32>, !hgraph.node<1xf32>
}
