hgraph.func @two_graphs(%g: !hgraph.graph, %g2: !hgraph.graph) { hgraph.return }
