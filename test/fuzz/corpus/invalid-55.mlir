hgraph.func @scale_element_type(%g: !hgraph.graph, %s: !hgraph.edge<1xf16>, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.scale %s, %x : !hgraph.edge<1xf16>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
