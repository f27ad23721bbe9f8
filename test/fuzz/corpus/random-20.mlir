hgraph.func @p20_t(%g: !hgraph.graph, %h0: !hgraph.node<64xf32, heads = 2> {hgraph.name = "h0"}, %W0: !hgraph.weight<node, 64x2xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<edge, 16xf32> {hgraph.name = "W1"}) -> (!hgraph.edge<16xf32, heads = 2>, !hgraph.edge<2xf32, heads = 2>) {
  %v0 = hgraph.typed_linear %W0, %h0 from src : !hgraph.weight<node, 64x2xf32>, !hgraph.node<64xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %v1 = hgraph.leaky_relu %v0 alpha 0.01 : !hgraph.edge<2xf32, heads = 2>
  %v2 = hgraph.typed_vector %W1 : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32, heads = 2>
  %v3 = hgraph.add %v2, %v2 : !hgraph.edge<16xf32, heads = 2>
  hgraph.return %v3, %v1 : !hgraph.edge<16xf32, heads = 2>, !hgraph.edge<2xf32, heads = 2>
}
