hgraph.func @materialize_node(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.aggregate sum %x {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}
