hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W"}, %a: !hgraph.weight<edge, 4xf32> {hgraph.name = "a"}, %b: !hgraph.weight<edge, 4xf32> {hgraph.name = "b"}) -> !hgraph.node<4xf32, heads = 4> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32, heads = 4>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32, heads = 4>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32, heads = 4>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32, heads = 4>
  %sa = hgraph.dot %z, %av : !hgraph.edge<4xf32, heads = 4> -> !hgraph.edge<4xf32, heads = 4>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<4xf32, heads = 4> -> !hgraph.edge<4xf32, heads = 4>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<4xf32, heads = 4>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<4xf32, heads = 4>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<4xf32, heads = 4>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<4xf32, heads = 4>, !hgraph.edge<4xf32, heads = 4> -> !hgraph.edge<4xf32, heads = 4>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<4xf32, heads = 4> -> !hgraph.node<4xf32, heads = 4>
  hgraph.return %out : !hgraph.node<4xf32, heads = 4>
}
