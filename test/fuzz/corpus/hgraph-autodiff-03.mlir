hgraph.func @unused(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %u: !hgraph.node<4xf32>,
                    %W: !hgraph.weight<single, 4x4xf32>) -> !hgraph.node<4xf32> {
  %a = hgraph.typed_linear %W, %h from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  %b = hgraph.typed_linear %W, %a from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %b : !hgraph.node<4xf32>
}
