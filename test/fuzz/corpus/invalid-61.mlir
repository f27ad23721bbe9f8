hgraph.func @compact_from_dst(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %h from dst {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
