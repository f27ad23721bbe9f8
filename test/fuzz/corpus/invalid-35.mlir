hgraph.func @product_two_vectors(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8xf32>) {
  %0 = hgraph.weight_product %a, %a : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 1xf32>
  hgraph.return
}
