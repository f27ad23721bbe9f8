hgraph.func @transposed(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>,
                        %W: !hgraph.weight<edge, 16x8xf32>, %a: !hgraph.weight<edge, 16xf32>) -> !hgraph.edge<1xf32> {
  %y = hgraph.typed_linear %W, %x from edge transpose : !hgraph.weight<edge, 16x8xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.dot %y, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}
