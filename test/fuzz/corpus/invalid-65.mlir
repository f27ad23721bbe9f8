hgraph.func @compact_weight_grad_from_dst(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %d: !hgraph.edge<8xf32>) {
  %0 = hgraph.weight_grad %h from dst, %d {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.node<8xf32>, !hgraph.edge<8xf32> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}
