hgraph.func @weight_int(%g: !hgraph.graph, %w: !hgraph.weight<edge, 4x4xi8>) { hgraph.return }
