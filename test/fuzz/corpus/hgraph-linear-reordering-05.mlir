hgraph.func @chain(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                   %K: !hgraph.weight<node, 16x16xf32>, %Watt: !hgraph.weight<edge, 1x16x16xf32>) -> !hgraph.edge<16xf32> {
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.node<16xf32>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 1x16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %katt : !hgraph.edge<16xf32>
}
