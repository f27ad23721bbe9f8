hgraph.func @compact_argument(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  %0 = hgraph.exp %x {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<8xf32>
  hgraph.return
}
