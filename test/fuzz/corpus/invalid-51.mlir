hgraph.func @scale_result(%g: !hgraph.graph, %s: !hgraph.edge<1xf32>, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.scale %s, %x : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<16xf32>
  hgraph.return
}
