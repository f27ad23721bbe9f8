hgraph.func @product_per_head(%g: !hgraph.graph, %a: !hgraph.weight<edge, 4x8x8xf32>, %b: !hgraph.weight<edge, 2x8x8xf32>) {
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 4x8x8xf32>, !hgraph.weight<edge, 2x8x8xf32> -> !hgraph.weight<edge, 4x8x8xf32>
  hgraph.return
}
