hgraph.func @not_compacted(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %K: !hgraph.weight<node, 16x16xf32>,
                           %S: !hgraph.weight<single, 16x16xf32>, %W: !hgraph.weight<edge, 16x16xf32>)
    -> (!hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>) {
  %k = hgraph.typed_linear %K, %h from src : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.typed_linear %S, %h from src : !hgraph.weight<single, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %t = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %v = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %k, %s, %t, %v : !hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>
}
