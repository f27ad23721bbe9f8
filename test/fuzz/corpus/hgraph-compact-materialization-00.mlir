hgraph.func @rgcn(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %W: !hgraph.weight<edge, 16x16xf32>) -> !hgraph.node<16xf32> {
  %msg = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %norm = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %scaled = hgraph.scale %norm, %msg : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %agg = hgraph.aggregate sum %scaled : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %agg : !hgraph.node<16xf32>
}
