hgraph.func @no_graph(%h: !hgraph.node<8xf32>) { hgraph.return }
