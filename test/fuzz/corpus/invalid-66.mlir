hgraph.func @compact_weight_grad_single(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %d: !hgraph.edge<8xf32>) {
  %0 = hgraph.weight_grad %h from src, %d {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.node<8xf32>, !hgraph.edge<8xf32> -> !hgraph.weight<single, 8x8xf32>
  hgraph.return
}
