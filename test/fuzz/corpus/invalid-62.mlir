hgraph.func @compact_softmax(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %1 = hgraph.edge_softmax %0 {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<8xf32>
  hgraph.return
}
