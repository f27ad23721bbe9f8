hgraph.func @rows(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                  %W1: !hgraph.weight<edge, 16x8xf32>, %W2: !hgraph.weight<edge, 8x8xf32>,
                  %K: !hgraph.weight<node, 16x16xf32>, %Watt: !hgraph.weight<edge, 16x16xf32>,
                  %V: !hgraph.weight<single, 16x4xf32>, %c: !hgraph.weight<single, 4xf32>) -> (!hgraph.edge<8xf32>, !hgraph.edge<16xf32>, !hgraph.edge<1xf32>) {
  %y1 = hgraph.typed_linear %W1, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x8xf32>, !hgraph.node<16xf32> -> !hgraph.edge<8xf32>
  %y2 = hgraph.typed_linear %W2, %y1 from edge : !hgraph.weight<edge, 8x8xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.node<16xf32>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %v = hgraph.typed_linear %V, %h from dst : !hgraph.weight<single, 16x4xf32>, !hgraph.node<16xf32> -> !hgraph.edge<4xf32>
  %cv = hgraph.typed_vector %c : !hgraph.weight<single, 4xf32> -> !hgraph.edge<4xf32>
  %s = hgraph.dot %v, %cv : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  hgraph.return %y2, %katt, %s : !hgraph.edge<8xf32>, !hgraph.edge<16xf32>, !hgraph.edge<1xf32>
}
