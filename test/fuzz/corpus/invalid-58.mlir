hgraph.func @concat_width(%g: !hgraph.graph, %x: !hgraph.node<8xf32>) {
  %0 = hgraph.concat %x, %x : !hgraph.node<8xf32>, !hgraph.node<8xf32> -> !hgraph.node<24xf32>
  hgraph.return
}
