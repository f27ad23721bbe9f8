hgraph.func @aggregate_nodes(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  %0 = hgraph.aggregate sum %h : !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
