hgraph.func @p21(%g: !hgraph.graph, %h0: !hgraph.node<32xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 7x1xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<node, 1x7xf32> {hgraph.name = "W1"}, %h1: !hgraph.node<1xf32> {hgraph.name = "h1"}, %W2: !hgraph.weight<edge, 1x7xf32> {hgraph.name = "W2"}) -> (!hgraph.edge<1xf32>, !hgraph.edge<1xf32>, !hgraph.node<1xf32>, !hgraph.node<1xf32>) {
  %v0 = hgraph.slice %h0 offset 23 : !hgraph.node<32xf32> -> !hgraph.node<7xf32>
  %v1 = hgraph.dot %h0, %h0 : !hgraph.node<32xf32> -> !hgraph.node<1xf32>
  %v2 = hgraph.typed_linear %W0, %v0 from src : !hgraph.weight<single, 7x1xf32>, !hgraph.node<7xf32> -> !hgraph.edge<1xf32>
  %v3 = hgraph.aggregate mean %v2 : !hgraph.edge<1xf32> -> !hgraph.node<1xf32>
  %v4 = hgraph.typed_linear %W1, %v3 from node : !hgraph.weight<node, 1x7xf32>, !hgraph.node<1xf32> -> !hgraph.node<7xf32>
  %v5 = hgraph.add %v0, %v4 : !hgraph.node<7xf32>
  %v6 = hgraph.sub %v1, %h1 : !hgraph.node<1xf32>
  %v7 = hgraph.dot %v4, %v4 : !hgraph.node<7xf32> -> !hgraph.node<1xf32>
  %v8 = hgraph.edge_softmax %v2 : !hgraph.edge<1xf32>
  %v9 = hgraph.typed_linear %W2, %v5 from src transpose : !hgraph.weight<edge, 1x7xf32>, !hgraph.node<7xf32> -> !hgraph.edge<1xf32>
  %v10 = hgraph.dot %v2, %v9 : !hgraph.edge<1xf32> -> !hgraph.edge<1xf32>
  hgraph.return %v10, %v8, %v7, %v6 : !hgraph.edge<1xf32>, !hgraph.edge<1xf32>, !hgraph.node<1xf32>, !hgraph.node<1xf32>
}
