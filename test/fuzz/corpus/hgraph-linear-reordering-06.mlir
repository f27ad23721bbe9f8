hgraph.func @edge_chain(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %s: !hgraph.edge<1xf32>,
                        %W1: !hgraph.weight<edge, 16x8xf32>, %W2: !hgraph.weight<single, 8x4xf32>,
                        %W: !hgraph.weight<edge, 16x16xf32>, %b: !hgraph.weight<edge, 16xf32>) -> (!hgraph.edge<4xf32>, !hgraph.node<16xf32>) {
  %y1 = hgraph.typed_linear %W1, %h from src : !hgraph.weight<edge, 16x8xf32>, !hgraph.node<16xf32> -> !hgraph.edge<8xf32>
  %y2 = hgraph.typed_linear %W2, %y1 from edge : !hgraph.weight<single, 8x4xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<4xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %dz = hgraph.scale %s, %bv : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %dx = hgraph.typed_linear %W, %dz from edge transpose : !hgraph.weight<edge, 16x16xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %dh = hgraph.aggregate sum %dx : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %y2, %dh : !hgraph.edge<4xf32>, !hgraph.node<16xf32>
}
