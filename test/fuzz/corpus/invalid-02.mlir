hgraph.func @heads_do_not_divide(%g: !hgraph.graph, %h: !hgraph.edge<10xf32, heads = 4>) { hgraph.return }
