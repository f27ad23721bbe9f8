hgraph.func @p4_t(%g: !hgraph.graph, %h0: !hgraph.node<1xf32> {hgraph.name = "h0"}) -> !hgraph.node<1xf32> {
  %v0 = hgraph.gather %h0 from dst : !hgraph.node<1xf32> -> !hgraph.edge<1xf32>
  %v1 = hgraph.const_scale %h0 by 0.5 : !hgraph.node<1xf32>
  %v2 = hgraph.scale %v1, %v1 : !hgraph.node<1xf32>, !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  %v3 = hgraph.tanh %v2 : !hgraph.node<1xf32>
  %v4 = hgraph.exp %v3 : !hgraph.node<1xf32>
  %v5 = hgraph.div %v1, %v4 : !hgraph.node<1xf32>
  %v6 = hgraph.aggregate sum %v0 : !hgraph.edge<1xf32> -> !hgraph.node<1xf32>
  %v7 = hgraph.dot %v5, %v3 : !hgraph.node<1xf32> -> !hgraph.node<1xf32>
  %v8 = hgraph.gather %v5 from dst : !hgraph.node<1xf32> -> !hgraph.edge<1xf32>
  %v9 = hgraph.leaky_relu %v7 alpha -0.3 : !hgraph.node<1xf32>
  %v10 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %v11 = hgraph.tanh %v10 : !hgraph.edge<1xf32>
  %v12 = hgraph.sub %v10, %v11 : !hgraph.edge<1xf32>
  %v13 = hgraph.aggregate sum %v12 : !hgraph.edge<1xf32> -> !hgraph.node<1xf32>
  hgraph.return %v13 : !hgraph.node<1xf32>
}
