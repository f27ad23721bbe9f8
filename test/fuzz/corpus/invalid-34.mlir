hgraph.func @product_index(%g: !hgraph.graph, %a: !hgraph.weight<single, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<single, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> !hgraph.weight<node, 8x8xf32>
  hgraph.return
}
