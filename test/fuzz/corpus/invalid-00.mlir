hgraph.func @zero_width(%g: !hgraph.graph, %h: !hgraph.node<0xf32>) { hgraph.return }
