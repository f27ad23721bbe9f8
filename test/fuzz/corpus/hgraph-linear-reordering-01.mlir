hgraph.func @per_head(%g: !hgraph.graph, %h: !hgraph.node<16xf32, heads = 2>,
                      %W: !hgraph.weight<edge, 2x8x4xf32>, %b: !hgraph.weight<edge, 8xf32>) -> !hgraph.edge<2xf32, heads = 2> {
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 2x8x4xf32>, !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %s = hgraph.dot %zt, %bv : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %s : !hgraph.edge<2xf32, heads = 2>
}
