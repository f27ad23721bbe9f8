hgraph.func @product_shape(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x16xf32>, %b: !hgraph.weight<edge, 16xf32>) {
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 8x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>
  hgraph.return
}
