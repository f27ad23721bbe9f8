hgraph.func @from_edge(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %x: !hgraph.edge<16xf32>,
                       %W: !hgraph.weight<edge, 16x16xf32>, %S: !hgraph.weight<single, 16x8xf32>)
    -> (!hgraph.edge<8xf32>, !hgraph.edge<8xf32>, !hgraph.edge<8xf32>) {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %y = hgraph.typed_linear %S, %z from edge : !hgraph.weight<single, 16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  %v = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %w = hgraph.typed_linear %S, %v from edge : !hgraph.weight<single, 16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  %u = hgraph.typed_linear %S, %x from edge : !hgraph.weight<single, 16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  hgraph.return %y, %w, %u : !hgraph.edge<8xf32>, !hgraph.edge<8xf32>, !hgraph.edge<8xf32>
}
