hgraph.func @p5(%g: !hgraph.graph, %h0: !hgraph.node<64xf32, heads = 4> {hgraph.name = "h0"}, %x1: !hgraph.edge<1xf32> {hgraph.name = "x1"}, %W0: !hgraph.weight<edge, 1x1xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<node, 1x1xf32> {hgraph.name = "W1"}) -> (!hgraph.node<1xf32>, !hgraph.edge<3xf32>) {
  %v0 = hgraph.aggregate max %x1 : !hgraph.edge<1xf32> -> !hgraph.node<1xf32>
  %v1 = hgraph.tanh %v0 : !hgraph.node<1xf32>
  %v2 = hgraph.add %v0, %v1 : !hgraph.node<1xf32>
  %v3 = hgraph.typed_linear %W0, %v0 from src : !hgraph.weight<edge, 1x1xf32>, !hgraph.node<1xf32> -> !hgraph.edge<1xf32>
  %v4 = hgraph.concat %x1, %x1, %v3 : !hgraph.edge<1xf32>, !hgraph.edge<1xf32>, !hgraph.edge<1xf32> -> !hgraph.edge<3xf32>
  %v5 = hgraph.typed_linear %W1, %v1 from node : !hgraph.weight<node, 1x1xf32>, !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  %v6 = hgraph.dot %v2, %v5 : !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  hgraph.return %v6, %v4 : !hgraph.node<1xf32>, !hgraph.edge<3xf32>
}
