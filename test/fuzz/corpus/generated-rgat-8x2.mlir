hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W"}, %a: !hgraph.weight<edge, 8xf32> {hgraph.name = "a"}, %b: !hgraph.weight<edge, 8xf32> {hgraph.name = "b"}) -> !hgraph.node<8xf32, heads = 2> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %sa = hgraph.dot %z, %av : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<2xf32, heads = 2>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<2xf32, heads = 2>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<2xf32, heads = 2>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %out : !hgraph.node<8xf32, heads = 2>
}
