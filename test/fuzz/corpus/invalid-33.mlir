hgraph.func @product_node_of(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.weight_product %a, %b node_of src : !hgraph.weight<edge, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}
