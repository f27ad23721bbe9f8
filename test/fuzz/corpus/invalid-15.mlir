hgraph.func @return_type(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) -> !hgraph.node<16xf32> {
  hgraph.return %h : !hgraph.node<8xf32>
}
