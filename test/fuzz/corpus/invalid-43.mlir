hgraph.func @norm_width(%g: !hgraph.graph) {
  %0 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return
}
