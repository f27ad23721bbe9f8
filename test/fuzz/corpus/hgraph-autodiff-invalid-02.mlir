hgraph.func @taken(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> {
  hgraph.return %h : !hgraph.node<4xf32>
}
hgraph.func @taken_fwd(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> attributes {hgraph.kind = "inference"} {
  hgraph.return %h : !hgraph.node<4xf32>
}
