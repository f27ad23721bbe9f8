hgraph.func @aggregate_width(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.aggregate mean %x : !hgraph.edge<8xf32> -> !hgraph.node<16xf32>
  hgraph.return
}
