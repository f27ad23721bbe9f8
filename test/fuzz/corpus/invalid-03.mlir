hgraph.func @zero_heads(%g: !hgraph.graph, %h: !hgraph.node<8xf32, heads = 0>) { hgraph.return }
