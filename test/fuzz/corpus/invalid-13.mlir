hgraph.func @declaration(%g: !hgraph.graph)
