hgraph.func @node_typed(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                        %K: !hgraph.weight<node, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>, %c: !hgraph.weight<single, 16xf32>) -> (!hgraph.edge<1xf32>, !hgraph.edge<1xf32>) {
  %k = hgraph.typed_linear %K, %h from src : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.dot %k, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %q = hgraph.typed_linear %K, %h from dst : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %cv = hgraph.typed_vector %c : !hgraph.weight<single, 16xf32> -> !hgraph.edge<16xf32>
  %t = hgraph.dot %q, %cv : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s, %t : !hgraph.edge<1xf32>, !hgraph.edge<1xf32>
}
