hgraph.func @compact_argument(%g: !hgraph.graph,
    %x: !hgraph.edge<4xf32> {hgraph.name = "x", hgraph.materialization = #hgraph.materialization<compact>})
    -> !hgraph.node<4xf32> {
  %o = hgraph.aggregate sum %x : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}
