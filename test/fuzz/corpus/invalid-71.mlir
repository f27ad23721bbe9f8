hgraph.func @compact_malformed(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = "hgraph.typed_linear"(%w) {hgraph.materialization = #hgraph.materialization<compact>} : (!hgraph.weight<edge, 8x8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}
