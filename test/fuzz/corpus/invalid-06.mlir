hgraph.func @weight_index(%g: !hgraph.graph, %w: !hgraph.weight<relation, 4x4xf32>) { hgraph.return }
