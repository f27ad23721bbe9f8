hgraph.func @compact_result(%g: !hgraph.graph, %h: !hgraph.node<4xf32>)
    -> (!hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>}) {
  %z = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  hgraph.return %z : !hgraph.edge<4xf32>
}
