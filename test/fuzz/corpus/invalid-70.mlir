hgraph.func @huge_weight(%g: !hgraph.graph, %w: !hgraph.weight<edge, 4611686018427387904x4xf32>) { hgraph.return }
