hgraph.func @weight_zero(%g: !hgraph.graph, %w: !hgraph.weight<edge, 4x0xf32>) { hgraph.return }
