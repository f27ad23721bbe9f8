hgraph.func @gather_edge_input(%g: !hgraph.graph, %h: !hgraph.edge<8xf32>) {
  %0 = hgraph.gather %h from src : !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}
