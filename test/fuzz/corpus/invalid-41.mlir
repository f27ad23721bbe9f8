hgraph.func @gather_width(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  %0 = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  hgraph.return
}
