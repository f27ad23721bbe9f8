hgraph.func @product(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<edge, 4x4xf32>, %a: !hgraph.weight<edge, 4xf32>) -> !hgraph.edge<1xf32> {
  %wa = hgraph.weight_product %W, %a : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4xf32>
  %v = hgraph.typed_vector %wa : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32>
  %x = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %s = hgraph.dot %x, %v : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}
