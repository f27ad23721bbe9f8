hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 64x64xf32> {hgraph.name = "W"}, %a: !hgraph.weight<edge, 64xf32> {hgraph.name = "a"}, %b: !hgraph.weight<edge, 64xf32> {hgraph.name = "b"}) -> !hgraph.node<64xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  hgraph.return %out : !hgraph.node<64xf32>
}
