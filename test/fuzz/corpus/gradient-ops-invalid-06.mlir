hgraph.func @type_sum_domain(%g: !hgraph.graph, %d: !hgraph.node<4xf32>) {
  %0 = hgraph.type_sum %d : !hgraph.node<4xf32> -> !hgraph.weight<edge, 4xf32>
  hgraph.return
}
