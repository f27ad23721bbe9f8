hgraph.func @bad_result(%g: !hgraph.graph) -> !hgraph.graph { hgraph.return %g : !hgraph.graph }
