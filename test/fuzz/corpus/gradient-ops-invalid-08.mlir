hgraph.func @degree_norm_width(%g: !hgraph.graph) {
  %0 = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<2xf32>
  hgraph.return
}
