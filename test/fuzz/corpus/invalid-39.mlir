hgraph.func @product_element_type(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf16>) {
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 8x8xf32>, !hgraph.weight<edge, 8x8xf16> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}
