hgraph.func @p19(%g: !hgraph.graph, %h0: !hgraph.node<1xf32> {hgraph.name = "h0"}, %h1: !hgraph.node<6xf32, heads = 2> {hgraph.name = "h1"}, %W0: !hgraph.weight<single, 2x1x4xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 2x4x1xf32> {hgraph.name = "W1"}) -> !hgraph.edge<2xf32, heads = 2> {
  %v0 = hgraph.slice %h1 offset 1 : !hgraph.node<6xf32, heads = 2> -> !hgraph.node<2xf32, heads = 2>
  %v1 = hgraph.dot %h1, %h1 : !hgraph.node<6xf32, heads = 2> -> !hgraph.node<2xf32, heads = 2>
  %v2 = hgraph.weight_product %W0, %W1 : !hgraph.weight<single, 2x1x4xf32>, !hgraph.weight<single, 2x4x1xf32> -> !hgraph.weight<single, 2x1x1xf32>
  %v3 = hgraph.typed_linear %v2, %v0 from dst : !hgraph.weight<single, 2x1x1xf32>, !hgraph.node<2xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %v3 : !hgraph.edge<2xf32, heads = 2>
}
