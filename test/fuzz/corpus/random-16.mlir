hgraph.func @p16_t(%g: !hgraph.graph, %h0: !hgraph.node<1xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 1x16xf32> {hgraph.name = "W0"}) -> !hgraph.node<16xf32> {
  %v0 = hgraph.typed_linear %W0, %h0 from src : !hgraph.weight<node, 1x16xf32>, !hgraph.node<1xf32> -> !hgraph.edge<16xf32>
  %v1 = hgraph.aggregate max %v0 : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  %v2 = hgraph.aggregate mean %v0 : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  %v3 = hgraph.sub %v2, %v1 : !hgraph.node<16xf32>
  %v4 = hgraph.sigmoid %v3 : !hgraph.node<16xf32>
  hgraph.return %v4 : !hgraph.node<16xf32>
}
