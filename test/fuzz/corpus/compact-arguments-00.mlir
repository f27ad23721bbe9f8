hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
               %x: !hgraph.edge<4xf32> {hgraph.name = "x", hgraph.materialization = #hgraph.materialization<compact>})
    -> (!hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>}, !hgraph.edge<4xf32>) {
  %s = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.tanh %x {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<4xf32>
  %y = hgraph.add %s, %t : !hgraph.edge<4xf32>
  hgraph.return %y, %y : !hgraph.edge<4xf32>, !hgraph.edge<4xf32>
}
