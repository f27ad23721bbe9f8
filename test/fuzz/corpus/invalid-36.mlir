hgraph.func @product_inner(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x16xf32>, %b: !hgraph.weight<edge, 8xf32>) {
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 8x16xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return
}
