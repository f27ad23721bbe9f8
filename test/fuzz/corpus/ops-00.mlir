hgraph.func @types(%g: !hgraph.graph, %a: !hgraph.node<64xf32>,
                   %b: !hgraph.node<64xf16, heads = 4>,
                   %c: !hgraph.edge<8xbf16, heads = 8>,
                   %w0: !hgraph.weight<single, 64x32xf32>,
                   %w1: !hgraph.weight<node, 64xf32>,
                   %w2: !hgraph.weight<edge, 4x16x16xf32>) {
  hgraph.return
}

hgraph.func @typed_linear(%g: !hgraph.graph, %h: !hgraph.node<32xf32>,
    %he: !hgraph.edge<64xf32, heads = 4>,
    %ws: !hgraph.weight<single, 32x64xf32>,
    %wn: !hgraph.weight<node, 32x64xf32>,
    %we: !hgraph.weight<edge, 32x64xf32>,
    %wh: !hgraph.weight<edge, 4x16x8xf32>)
    -> (!hgraph.node<64xf32>, !hgraph.edge<64xf32, heads = 4>,
        !hgraph.edge<64xf32>, !hgraph.edge<32xf32, heads = 4>) {
  %0 = hgraph.typed_linear %ws, %h from node : !hgraph.weight<single, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.node<64xf32>
  %1 = hgraph.typed_linear %wn, %h from node : !hgraph.weight<node, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.node<64xf32>
  %2 = hgraph.typed_linear %we, %h from src : !hgraph.weight<edge, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32, heads = 4>
  %3 = hgraph.typed_linear %wn, %h from dst : !hgraph.weight<node, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32>
  %4 = hgraph.typed_linear %wh, %he from edge : !hgraph.weight<edge, 4x16x8xf32>, !hgraph.edge<64xf32, heads = 4> -> !hgraph.edge<32xf32, heads = 4>
  %5 = hgraph.add %0, %1 : !hgraph.node<64xf32>
  hgraph.return %5, %2, %3, %4 : !hgraph.node<64xf32>, !hgraph.edge<64xf32, heads = 4>, !hgraph.edge<64xf32>, !hgraph.edge<32xf32, heads = 4>
}

hgraph.func @weights(%g: !hgraph.graph,
    %W: !hgraph.weight<edge, 32x64xf32>, %a: !hgraph.weight<edge, 64xf32>,
    %K: !hgraph.weight<node, 64x64xf32>, %Wa: !hgraph.weight<edge, 4x16x16xf32>,
    %S: !hgraph.weight<single, 64x8xf32>, %v: !hgraph.weight<node, 32xf32>)
    -> (!hgraph.weight<edge, 32xf32>, !hgraph.weight<edge, 64x64xf32>,
        !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 32x8xf32>,
        !hgraph.weight<edge, 64xf32>, !hgraph.edge<64xf32, heads = 4>,
        !hgraph.node<32xf32>) {
  %0 = hgraph.weight_product %W, %a : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32xf32>
  %1 = hgraph.weight_product %K, %Wa node_of src : !hgraph.weight<node, 64x64xf32>, !hgraph.weight<edge, 4x16x16xf32> -> !hgraph.weight<edge, 64x64xf32>
  %2 = hgraph.weight_product %Wa, %Wa : !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 4x16x16xf32> -> !hgraph.weight<edge, 4x16x16xf32>
  %3 = hgraph.weight_product %W, %S : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<single, 64x8xf32> -> !hgraph.weight<edge, 32x8xf32>
  %4 = hgraph.weight_product %v, %W node_of dst : !hgraph.weight<node, 32xf32>, !hgraph.weight<edge, 32x64xf32> -> !hgraph.weight<edge, 64xf32>
  %5 = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32, heads = 4>
  %6 = hgraph.typed_vector %v : !hgraph.weight<node, 32xf32> -> !hgraph.node<32xf32>
  hgraph.return %0, %1, %2, %3, %4, %5, %6 : !hgraph.weight<edge, 32xf32>, !hgraph.weight<edge, 64x64xf32>, !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 32x8xf32>, !hgraph.weight<edge, 64xf32>, !hgraph.edge<64xf32, heads = 4>, !hgraph.node<32xf32>
}

hgraph.func @graph_access(%g: !hgraph.graph, %h: !hgraph.node<16xf32, heads = 2>)
    -> (!hgraph.node<16xf32, heads = 2>, !hgraph.node<16xf32, heads = 2>,
        !hgraph.node<16xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2>,
        !hgraph.edge<1xf32>) {
  %s = hgraph.gather %h from src : !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %t = hgraph.gather %h from dst : !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %0 = hgraph.aggregate sum %s : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  %1 = hgraph.aggregate mean %t : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  %2 = hgraph.aggregate max %t : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  %3 = hgraph.edge_softmax %s : !hgraph.edge<16xf32, heads = 2>
  %4 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  hgraph.return %0, %1, %2, %3, %4 : !hgraph.node<16xf32, heads = 2>, !hgraph.node<16xf32, heads = 2>, !hgraph.node<16xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2>, !hgraph.edge<1xf32>
}

hgraph.func @row_math(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>,
    %y: !hgraph.edge<8xf32, heads = 2>, %n: !hgraph.node<4xf32>)
    -> (!hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2>,
        !hgraph.edge<16xf32, heads = 2>, !hgraph.node<8xf32>) {
  %d = hgraph.dot %x, %y : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %0 = hgraph.add %x, %y : !hgraph.edge<8xf32, heads = 2>
  %1 = hgraph.sub %0, %y : !hgraph.edge<8xf32, heads = 2>
  %2 = hgraph.mul %1, %x : !hgraph.edge<8xf32, heads = 2>
  %3 = hgraph.div %2, %y : !hgraph.edge<8xf32, heads = 2>
  %4 = hgraph.exp %3 : !hgraph.edge<8xf32, heads = 2>
  %5 = hgraph.relu %4 : !hgraph.edge<8xf32, heads = 2>
  %6 = hgraph.tanh %5 : !hgraph.edge<8xf32, heads = 2>
  %7 = hgraph.sigmoid %6 : !hgraph.edge<8xf32, heads = 2>
  %8 = hgraph.neg %7 : !hgraph.edge<8xf32, heads = 2>
  %9 = hgraph.leaky_relu %8 alpha 0.2 : !hgraph.edge<8xf32, heads = 2>
  %10 = hgraph.const_scale %9 by 0.125 : !hgraph.edge<8xf32, heads = 2>
  %11 = hgraph.scale %d, %10 : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %12 = hgraph.concat %11, %x : !hgraph.edge<8xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %13 = hgraph.concat %n, %n : !hgraph.node<4xf32>, !hgraph.node<4xf32> -> !hgraph.node<8xf32>
  hgraph.return %d, %11, %12, %13 : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2>, !hgraph.node<8xf32>
}

hgraph.func @materialization(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
    %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>)
    -> (!hgraph.edge<16xf32>, !hgraph.edge<1xf32>, !hgraph.edge<16xf32>) {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.dot %z, %av {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %t = hgraph.typed_linear %W, %h from dst {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %z, %s, %t : !hgraph.edge<16xf32>, !hgraph.edge<1xf32>, !hgraph.edge<16xf32>
}
