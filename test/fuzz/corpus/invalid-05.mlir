hgraph.func @weight_rank(%g: !hgraph.graph, %w: !hgraph.weight<edge, 2x2x2x2xf32>) { hgraph.return }
