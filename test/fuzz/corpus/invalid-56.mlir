hgraph.func @concat_one(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.concat %x : !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
