hgraph.func @p13(%g: !hgraph.graph, %h0: !hgraph.node<4xf32, heads = 4> {hgraph.name = "h0"}) -> !hgraph.node<4xf32, heads = 4> {
  %v0 = hgraph.dot %h0, %h0 : !hgraph.node<4xf32, heads = 4> -> !hgraph.node<4xf32, heads = 4>
  %v1 = hgraph.tanh %v0 : !hgraph.node<4xf32, heads = 4>
  %v2 = hgraph.dot %v1, %v1 : !hgraph.node<4xf32, heads = 4> -> !hgraph.node<4xf32, heads = 4>
  hgraph.return %v2 : !hgraph.node<4xf32, heads = 4>
}
