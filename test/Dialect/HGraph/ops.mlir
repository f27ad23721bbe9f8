// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s

// Round trip of every hgraph type and operation.

// CHECK-LABEL: hgraph.func @types
// CHECK-SAME: !hgraph.graph
// CHECK-SAME: !hgraph.node<64xf32>
// CHECK-SAME: !hgraph.node<64xf16, heads = 4>
// CHECK-SAME: !hgraph.edge<8xbf16, heads = 8>
// CHECK-SAME: !hgraph.weight<single, 64x32xf32>
// CHECK-SAME: !hgraph.weight<node, 64xf32>
// CHECK-SAME: !hgraph.weight<edge, 4x16x16xf32>
hgraph.func @types(%g: !hgraph.graph, %a: !hgraph.node<64xf32>,
                   %b: !hgraph.node<64xf16, heads = 4>,
                   %c: !hgraph.edge<8xbf16, heads = 8>,
                   %w0: !hgraph.weight<single, 64x32xf32>,
                   %w1: !hgraph.weight<node, 64xf32>,
                   %w2: !hgraph.weight<edge, 4x16x16xf32>) {
  hgraph.return
}

// CHECK-LABEL: hgraph.func @typed_linear
hgraph.func @typed_linear(%g: !hgraph.graph, %h: !hgraph.node<32xf32>,
    %he: !hgraph.edge<64xf32, heads = 4>,
    %ws: !hgraph.weight<single, 32x64xf32>,
    %wn: !hgraph.weight<node, 32x64xf32>,
    %we: !hgraph.weight<edge, 32x64xf32>,
    %wh: !hgraph.weight<edge, 4x16x8xf32>)
    -> (!hgraph.node<64xf32>, !hgraph.edge<64xf32, heads = 4>,
        !hgraph.edge<64xf32>, !hgraph.edge<32xf32, heads = 4>) {
  // CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from node : !hgraph.weight<single, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.node<64xf32>
  %0 = hgraph.typed_linear %ws, %h from node : !hgraph.weight<single, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.node<64xf32>
  // CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from node : !hgraph.weight<node, 32x64xf32>
  %1 = hgraph.typed_linear %wn, %h from node : !hgraph.weight<node, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.node<64xf32>
  // CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from src : !hgraph.weight<edge, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32, heads = 4>
  %2 = hgraph.typed_linear %we, %h from src : !hgraph.weight<edge, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32, heads = 4>
  // CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from dst : !hgraph.weight<node, 32x64xf32>
  %3 = hgraph.typed_linear %wn, %h from dst : !hgraph.weight<node, 32x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32>
  // CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from edge : !hgraph.weight<edge, 4x16x8xf32>, !hgraph.edge<64xf32, heads = 4> -> !hgraph.edge<32xf32, heads = 4>
  %4 = hgraph.typed_linear %wh, %he from edge : !hgraph.weight<edge, 4x16x8xf32>, !hgraph.edge<64xf32, heads = 4> -> !hgraph.edge<32xf32, heads = 4>
  %5 = hgraph.add %0, %1 : !hgraph.node<64xf32>
  // CHECK: hgraph.return
  hgraph.return %5, %2, %3, %4 : !hgraph.node<64xf32>, !hgraph.edge<64xf32, heads = 4>, !hgraph.edge<64xf32>, !hgraph.edge<32xf32, heads = 4>
}

// CHECK-LABEL: hgraph.func @weights
hgraph.func @weights(%g: !hgraph.graph,
    %W: !hgraph.weight<edge, 32x64xf32>, %a: !hgraph.weight<edge, 64xf32>,
    %K: !hgraph.weight<node, 64x64xf32>, %Wa: !hgraph.weight<edge, 4x16x16xf32>,
    %S: !hgraph.weight<single, 64x8xf32>, %v: !hgraph.weight<node, 32xf32>)
    -> (!hgraph.weight<edge, 32xf32>, !hgraph.weight<edge, 64x64xf32>,
        !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 32x8xf32>,
        !hgraph.weight<edge, 64xf32>, !hgraph.edge<64xf32, heads = 4>,
        !hgraph.node<32xf32>) {
  // CHECK: hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32xf32>
  %0 = hgraph.weight_product %W, %a : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32xf32>
  // CHECK: hgraph.weight_product %{{.*}}, %{{.*}} node_of src : !hgraph.weight<node, 64x64xf32>, !hgraph.weight<edge, 4x16x16xf32> -> !hgraph.weight<edge, 64x64xf32>
  %1 = hgraph.weight_product %K, %Wa node_of src : !hgraph.weight<node, 64x64xf32>, !hgraph.weight<edge, 4x16x16xf32> -> !hgraph.weight<edge, 64x64xf32>
  // CHECK: hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 4x16x16xf32> -> !hgraph.weight<edge, 4x16x16xf32>
  %2 = hgraph.weight_product %Wa, %Wa : !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 4x16x16xf32> -> !hgraph.weight<edge, 4x16x16xf32>
  // CHECK: hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<single, 64x8xf32> -> !hgraph.weight<edge, 32x8xf32>
  %3 = hgraph.weight_product %W, %S : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<single, 64x8xf32> -> !hgraph.weight<edge, 32x8xf32>
  // CHECK: hgraph.weight_product %{{.*}}, %{{.*}} node_of dst : !hgraph.weight<node, 32xf32>, !hgraph.weight<edge, 32x64xf32> -> !hgraph.weight<edge, 64xf32>
  %4 = hgraph.weight_product %v, %W node_of dst : !hgraph.weight<node, 32xf32>, !hgraph.weight<edge, 32x64xf32> -> !hgraph.weight<edge, 64xf32>
  // CHECK: hgraph.typed_vector %{{.*}} : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32, heads = 4>
  %5 = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32, heads = 4>
  // CHECK: hgraph.typed_vector %{{.*}} : !hgraph.weight<node, 32xf32> -> !hgraph.node<32xf32>
  %6 = hgraph.typed_vector %v : !hgraph.weight<node, 32xf32> -> !hgraph.node<32xf32>
  hgraph.return %0, %1, %2, %3, %4, %5, %6 : !hgraph.weight<edge, 32xf32>, !hgraph.weight<edge, 64x64xf32>, !hgraph.weight<edge, 4x16x16xf32>, !hgraph.weight<edge, 32x8xf32>, !hgraph.weight<edge, 64xf32>, !hgraph.edge<64xf32, heads = 4>, !hgraph.node<32xf32>
}

// CHECK-LABEL: hgraph.func @graph_access
hgraph.func @graph_access(%g: !hgraph.graph, %h: !hgraph.node<16xf32, heads = 2>)
    -> (!hgraph.node<16xf32, heads = 2>, !hgraph.node<16xf32, heads = 2>,
        !hgraph.node<16xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2>,
        !hgraph.edge<1xf32>) {
  // CHECK: hgraph.gather %{{.*}} from src : !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %s = hgraph.gather %h from src : !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  // CHECK: hgraph.gather %{{.*}} from dst
  %t = hgraph.gather %h from dst : !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  // CHECK: hgraph.aggregate sum %{{.*}} : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  %0 = hgraph.aggregate sum %s : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  // CHECK: hgraph.aggregate mean
  %1 = hgraph.aggregate mean %t : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  // CHECK: hgraph.aggregate max
  %2 = hgraph.aggregate max %t : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  // CHECK: hgraph.edge_softmax %{{.*}} : !hgraph.edge<16xf32, heads = 2>
  %3 = hgraph.edge_softmax %s : !hgraph.edge<16xf32, heads = 2>
  // CHECK: hgraph.relation_norm %{{.*}} : !hgraph.graph -> !hgraph.edge<1xf32>
  %4 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  hgraph.return %0, %1, %2, %3, %4 : !hgraph.node<16xf32, heads = 2>, !hgraph.node<16xf32, heads = 2>, !hgraph.node<16xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2>, !hgraph.edge<1xf32>
}

// The softmax and the sum over (destination, edge type) groups.
// CHECK-LABEL: hgraph.func @type_groups
hgraph.func @type_groups(%g: !hgraph.graph, %s: !hgraph.edge<4xf32, heads = 4>) -> (!hgraph.edge<4xf32, heads = 4>, !hgraph.edge<4xf32, heads = 4>) {
  // CHECK: hgraph.edge_softmax %{{.*}} by_type : !hgraph.edge<4xf32, heads = 4>
  %0 = hgraph.edge_softmax %s by_type : !hgraph.edge<4xf32, heads = 4>
  // CHECK: hgraph.group_sum %{{.*}} : !hgraph.edge<4xf32, heads = 4>
  %1 = hgraph.group_sum %0 : !hgraph.edge<4xf32, heads = 4>
  hgraph.return %0, %1 : !hgraph.edge<4xf32, heads = 4>, !hgraph.edge<4xf32, heads = 4>
}

// CHECK-LABEL: hgraph.func @row_math
hgraph.func @row_math(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>,
    %y: !hgraph.edge<8xf32, heads = 2>, %n: !hgraph.node<4xf32>)
    -> (!hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2>,
        !hgraph.edge<16xf32, heads = 2>, !hgraph.node<8xf32>) {
  // CHECK: hgraph.dot %{{.*}}, %{{.*}} : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %d = hgraph.dot %x, %y : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  // CHECK: hgraph.add
  %0 = hgraph.add %x, %y : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.sub
  %1 = hgraph.sub %0, %y : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.mul
  %2 = hgraph.mul %1, %x : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.div
  %3 = hgraph.div %2, %y : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.exp
  %4 = hgraph.exp %3 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.relu
  %5 = hgraph.relu %4 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.tanh
  %6 = hgraph.tanh %5 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.sigmoid
  %7 = hgraph.sigmoid %6 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.neg
  %n8 = hgraph.neg %7 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.gelu %{{.*}} : !hgraph.edge<8xf32, heads = 2>
  %8 = hgraph.gelu %n8 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.leaky_relu %{{.*}} alpha 2.000000e-01 : !hgraph.edge<8xf32, heads = 2>
  %9 = hgraph.leaky_relu %8 alpha 0.2 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.const_scale %{{.*}} by 1.250000e-01 : !hgraph.edge<8xf32, heads = 2>
  %10 = hgraph.const_scale %9 by 0.125 : !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.scale %{{.*}}, %{{.*}} : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %11 = hgraph.scale %d, %10 : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  // CHECK: hgraph.concat %{{.*}}, %{{.*}} : !hgraph.edge<8xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %12 = hgraph.concat %11, %x : !hgraph.edge<8xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  // CHECK: hgraph.concat %{{.*}}, %{{.*}} : !hgraph.node<4xf32>, !hgraph.node<4xf32> -> !hgraph.node<8xf32>
  %13 = hgraph.concat %n, %n : !hgraph.node<4xf32>, !hgraph.node<4xf32> -> !hgraph.node<8xf32>
  hgraph.return %d, %11, %12, %13 : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2>, !hgraph.node<8xf32>
}

// CHECK-LABEL: hgraph.func @materialization
hgraph.func @materialization(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
    %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>)
    -> (!hgraph.edge<16xf32>, !hgraph.edge<1xf32>, !hgraph.edge<16xf32>) {
  // CHECK: hgraph.typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>}
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  // A value computed only from compact values is compact too.
  // CHECK: hgraph.dot {{.*}} {hgraph.materialization = #hgraph.materialization<compact>}
  %s = hgraph.dot %z, %av {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  // Anything edge-wise may be stored one row per edge.
  // CHECK: hgraph.typed_linear {{.*}} from dst {hgraph.materialization = #hgraph.materialization<vanilla>}
  %t = hgraph.typed_linear %W, %h from dst {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %z, %s, %t : !hgraph.edge<16xf32>, !hgraph.edge<1xf32>, !hgraph.edge<16xf32>
}

// -----

// CHECK-LABEL: hgraph.func @weight_outer
// CHECK: hgraph.weight_outer %{{.*}}, %{{.*}} : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 8x4xf32>
// CHECK: hgraph.weight_outer %{{.*}}, %{{.*}} : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 2x4x2xf32>
hgraph.func @weight_outer(%g: !hgraph.graph, %u: !hgraph.weight<edge, 8xf32>, %v: !hgraph.weight<edge, 4xf32>) -> (!hgraph.weight<edge, 8x4xf32>, !hgraph.weight<edge, 2x4x2xf32>) {
  %r = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %p = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 2x4x2xf32>
  hgraph.return %r, %p : !hgraph.weight<edge, 8x4xf32>, !hgraph.weight<edge, 2x4x2xf32>
}

// Products with the vector cut into head blocks (RGAT with several heads and
// a full matrix after linear reordering), and their gradients.
// CHECK-LABEL: hgraph.func @head_products
// CHECK: hgraph.weight_product %{{.*}}, %{{.*}} heads 4 : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32x4xf32>
// CHECK: hgraph.weight_product %{{.*}}, %{{.*}} heads 4 : !hgraph.weight<edge, 32x4xf32>, !hgraph.weight<edge, 32x64xf32> -> !hgraph.weight<edge, 64xf32>
// CHECK: hgraph.weight_outer %{{.*}}, %{{.*}} heads 4 : !hgraph.weight<edge, 32x4xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32x64xf32>
hgraph.func @head_products(%g: !hgraph.graph, %W: !hgraph.weight<edge, 32x64xf32>, %b: !hgraph.weight<edge, 64xf32>)
    -> (!hgraph.weight<edge, 64xf32>, !hgraph.weight<edge, 32x64xf32>) {
  %m = hgraph.weight_product %W, %b heads 4 : !hgraph.weight<edge, 32x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32x4xf32>
  %db = hgraph.weight_product %m, %W heads 4 : !hgraph.weight<edge, 32x4xf32>, !hgraph.weight<edge, 32x64xf32> -> !hgraph.weight<edge, 64xf32>
  %dW = hgraph.weight_outer %m, %b heads 4 : !hgraph.weight<edge, 32x4xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 32x64xf32>
  hgraph.return %db, %dW : !hgraph.weight<edge, 64xf32>, !hgraph.weight<edge, 32x64xf32>
}
