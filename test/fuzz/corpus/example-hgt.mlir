hgraph.func @hgt(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                 %K: !hgraph.weight<node, 64x64xf32> {hgraph.name = "K"}, %Q: !hgraph.weight<node, 64x64xf32> {hgraph.name = "Q"}, %V: !hgraph.weight<node, 64x64xf32> {hgraph.name = "V"}, %A: !hgraph.weight<node, 64x64xf32> {hgraph.name = "A"},
                 %Watt: !hgraph.weight<edge, 1x64x64xf32> {hgraph.name = "Watt"}, %Wmsg: !hgraph.weight<edge, 1x64x64xf32> {hgraph.name = "Wmsg"}, %mu: !hgraph.weight<edge, 1xf32> {hgraph.name = "mu"}) -> !hgraph.node<64xf32> {
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.node<64xf32>
  %q = hgraph.typed_linear %Q, %h from node : !hgraph.weight<node, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.node<64xf32>
  %v = hgraph.typed_linear %V, %h from node : !hgraph.weight<node, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.node<64xf32>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 1x64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %qt = hgraph.gather %q from dst : !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %dot = hgraph.dot %katt, %qt : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %muv = hgraph.typed_vector %mu : !hgraph.weight<edge, 1xf32> -> !hgraph.edge<1xf32>
  %prior = hgraph.mul %dot, %muv : !hgraph.edge<1xf32>
  %score = hgraph.const_scale %prior by 0.125 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %m = hgraph.typed_linear %Wmsg, %v from src : !hgraph.weight<edge, 1x64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %msg = hgraph.scale %alpha, %m : !hgraph.edge<1xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
  %agg = hgraph.aggregate sum %msg : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  %out0 = hgraph.typed_linear %A, %agg from node : !hgraph.weight<node, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.node<64xf32>
  %out = hgraph.add %out0, %h : !hgraph.node<64xf32>
  hgraph.return %out : !hgraph.node<64xf32>
}
