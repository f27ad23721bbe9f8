hgraph.func @p8_t(%g: !hgraph.graph, %h0: !hgraph.node<8xf32, heads = 4> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 8x1xf32> {hgraph.name = "W0"}) -> !hgraph.edge<1xf32> {
  %v0 = hgraph.tanh %h0 : !hgraph.node<8xf32, heads = 4>
  %v1 = hgraph.sub %h0, %v0 : !hgraph.node<8xf32, heads = 4>
  %v2 = hgraph.typed_linear %W0, %v1 from src : !hgraph.weight<node, 8x1xf32>, !hgraph.node<8xf32, heads = 4> -> !hgraph.edge<1xf32>
  %v3 = hgraph.edge_softmax %v2 : !hgraph.edge<1xf32>
  hgraph.return %v3 : !hgraph.edge<1xf32>
}
