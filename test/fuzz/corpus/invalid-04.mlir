hgraph.func @two_dims(%g: !hgraph.graph, %h: !hgraph.node<4x4xf32>) { hgraph.return }
