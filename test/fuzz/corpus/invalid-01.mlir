hgraph.func @int_features(%g: !hgraph.graph, %h: !hgraph.node<8xi32>) { hgraph.return }
