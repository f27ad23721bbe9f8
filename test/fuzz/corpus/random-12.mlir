hgraph.func @p12_t(%g: !hgraph.graph, %h0: !hgraph.node<8xf32, heads = 4> {hgraph.name = "h0"}, %x1: !hgraph.edge<32xf32> {hgraph.name = "x1"}) -> (!hgraph.node<8xf32, heads = 4>, !hgraph.node<8xf32, heads = 4>, !hgraph.node<32xf32>) {
  %v0 = hgraph.aggregate sum %x1 : !hgraph.edge<32xf32> -> !hgraph.node<32xf32>
  %v1 = hgraph.gather %h0 from src : !hgraph.node<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  %v2 = hgraph.aggregate sum %v1 : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v3 = hgraph.const_scale %v1 by -0.75 : !hgraph.edge<8xf32, heads = 4>
  %v4 = hgraph.aggregate mean %v3 : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  %v5 = hgraph.aggregate mean %v1 : !hgraph.edge<8xf32, heads = 4> -> !hgraph.node<8xf32, heads = 4>
  hgraph.return %v5, %v2, %v0 : !hgraph.node<8xf32, heads = 4>, !hgraph.node<8xf32, heads = 4>, !hgraph.node<32xf32>
}
