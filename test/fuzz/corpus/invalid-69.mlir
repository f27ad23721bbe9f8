hgraph.func @huge_width(%g: !hgraph.graph, %h: !hgraph.node<9223372036854775807xf32>) { hgraph.return }
