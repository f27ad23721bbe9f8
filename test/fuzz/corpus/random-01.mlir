hgraph.func @p1(%g: !hgraph.graph, %h0: !hgraph.node<64xf32, heads = 2> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 64x2xf32> {hgraph.name = "W0"}) -> (!hgraph.node<2xf32, heads = 2>, !hgraph.edge<64xf32, heads = 2>, !hgraph.edge<1xf32>, !hgraph.weight<edge, 64x2xf32>) {
  %v0 = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %v1 = hgraph.typed_linear %W0, %h0 from dst : !hgraph.weight<single, 64x2xf32>, !hgraph.node<64xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %v2 = hgraph.weight_grad %h0 from src, %v1 : !hgraph.node<64xf32, heads = 2>, !hgraph.edge<2xf32, heads = 2> -> !hgraph.weight<edge, 64x2xf32>
  %v3 = hgraph.exp %h0 : !hgraph.node<64xf32, heads = 2>
  %v4 = hgraph.gather %v3 from dst : !hgraph.node<64xf32, heads = 2> -> !hgraph.edge<64xf32, heads = 2>
  %v5 = hgraph.dot %v1, %v1 : !hgraph.edge<2xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %v6 = hgraph.aggregate max %v5 : !hgraph.edge<2xf32, heads = 2> -> !hgraph.node<2xf32, heads = 2>
  hgraph.return %v6, %v4, %v0, %v2 : !hgraph.node<2xf32, heads = 2>, !hgraph.edge<64xf32, heads = 2>, !hgraph.edge<1xf32>, !hgraph.weight<edge, 64x2xf32>
}
