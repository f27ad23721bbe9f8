hgraph.func @type_sum_matrix(%g: !hgraph.graph, %d: !hgraph.edge<4xf32>) {
  %0 = hgraph.type_sum %d : !hgraph.edge<4xf32> -> !hgraph.weight<edge, 4x4xf32>
  hgraph.return
}
