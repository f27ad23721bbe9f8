hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
               %x: !hgraph.edge<4xf32> {hgraph.name = "x", hgraph.materialization = #hgraph.materialization<compact>})
    -> (!hgraph.node<4xf32>, !hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>}) {
  %s = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %m = hgraph.mul %s, %x : !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %y = hgraph.tanh %x : !hgraph.edge<4xf32>
  hgraph.return %o, %y : !hgraph.node<4xf32>, !hgraph.edge<4xf32>
}
