hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
               %W: !hgraph.weight<edge, 8x4xf32> {hgraph.name = "W"}) -> !hgraph.node<4xf32> {
  %m = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}
