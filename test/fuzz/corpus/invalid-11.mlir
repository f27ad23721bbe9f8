hgraph.func @bad_argument(%g: !hgraph.graph, %x: i32) { hgraph.return }
