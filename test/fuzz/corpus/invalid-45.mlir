hgraph.func @aggregate_to_edges(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.aggregate max %x : !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
