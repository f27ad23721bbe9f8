hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                  %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>, %b: !hgraph.weight<edge, 16xf32>) -> !hgraph.node<16xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %sb = hgraph.dot %bv, %zt : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %sum : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %out : !hgraph.node<16xf32>
}
