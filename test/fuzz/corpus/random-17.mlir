hgraph.func @p17(%g: !hgraph.graph, %h0: !hgraph.node<64xf32> {hgraph.name = "h0"}, %W0: !hgraph.weight<single, 64x1xf32> {hgraph.name = "W0"}, %W1: !hgraph.weight<single, 1x32xf32> {hgraph.name = "W1"}) -> (!hgraph.node<32xf32, heads = 4>, !hgraph.node<64xf32>) {
  %v0 = hgraph.gather %h0 from src : !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %v1 = hgraph.sigmoid %v0 : !hgraph.edge<64xf32>
  %v2 = hgraph.aggregate sum %v1 : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  %v3 = hgraph.sigmoid %v2 : !hgraph.node<64xf32>
  %v4 = hgraph.weight_product %W0, %W1 : !hgraph.weight<single, 64x1xf32>, !hgraph.weight<single, 1x32xf32> -> !hgraph.weight<single, 64x32xf32>
  %v5 = hgraph.typed_linear %v4, %h0 from node : !hgraph.weight<single, 64x32xf32>, !hgraph.node<64xf32> -> !hgraph.node<32xf32, heads = 4>
  hgraph.return %v5, %v3 : !hgraph.node<32xf32, heads = 4>, !hgraph.node<64xf32>
}
