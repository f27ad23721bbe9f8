hgraph.func @rgcn(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 64x64xf32> {hgraph.name = "W"}, %W0: !hgraph.weight<single, 64x64xf32> {hgraph.name = "W0"}) -> !hgraph.node<64xf32> {
  %msg = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %norm = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %scaled = hgraph.scale %norm, %msg : !hgraph.edge<1xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
  %agg = hgraph.aggregate sum %scaled : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  %self = hgraph.typed_linear %W0, %h from node : !hgraph.weight<single, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.node<64xf32>
  %out = hgraph.add %self, %agg : !hgraph.node<64xf32>
  hgraph.return %out : !hgraph.node<64xf32>
}
