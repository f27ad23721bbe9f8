hgraph.func @scale_domain(%g: !hgraph.graph, %s: !hgraph.node<1xf32>, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.scale %s, %x : !hgraph.node<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
