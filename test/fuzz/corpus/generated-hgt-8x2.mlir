hgraph.func @hgt(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                 %K: !hgraph.weight<node, 8x8xf32> {hgraph.name = "K"}, %Q: !hgraph.weight<node, 8x8xf32> {hgraph.name = "Q"}, %V: !hgraph.weight<node, 8x8xf32> {hgraph.name = "V"}, %A: !hgraph.weight<node, 8x8xf32> {hgraph.name = "A"},
                 %Watt: !hgraph.weight<edge, 2x4x4xf32> {hgraph.name = "Watt"}, %Wmsg: !hgraph.weight<edge, 2x4x4xf32> {hgraph.name = "Wmsg"}, %mu: !hgraph.weight<edge, 2xf32> {hgraph.name = "mu"}) -> !hgraph.node<8xf32> {
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32, heads = 2>
  %q = hgraph.typed_linear %Q, %h from node : !hgraph.weight<node, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32, heads = 2>
  %v = hgraph.typed_linear %V, %h from node : !hgraph.weight<node, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32, heads = 2>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 2x4x4xf32>, !hgraph.node<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %qt = hgraph.gather %q from dst : !hgraph.node<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %dot = hgraph.dot %katt, %qt : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %muv = hgraph.typed_vector %mu : !hgraph.weight<edge, 2xf32> -> !hgraph.edge<2xf32, heads = 2>
  %prior = hgraph.mul %dot, %muv : !hgraph.edge<2xf32, heads = 2>
  %score = hgraph.const_scale %prior by 0.5 : !hgraph.edge<2xf32, heads = 2>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<2xf32, heads = 2>
  %m = hgraph.typed_linear %Wmsg, %v from src : !hgraph.weight<edge, 2x4x4xf32>, !hgraph.node<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %msg = hgraph.scale %alpha, %m : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %agg = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  %out0 = hgraph.typed_linear %A, %agg from node : !hgraph.weight<node, 8x8xf32>, !hgraph.node<8xf32, heads = 2> -> !hgraph.node<8xf32>
  %out = hgraph.add %out0, %h : !hgraph.node<8xf32>
  hgraph.return %out : !hgraph.node<8xf32>
}
