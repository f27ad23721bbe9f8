// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s

// Round trip of the operations that gradients are written with.

// CHECK-LABEL: hgraph.func @gradients
hgraph.func @gradients(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                       %dz: !hgraph.edge<4xf32>, %da: !hgraph.edge<2xf32, heads = 2>,
                       %x: !hgraph.edge<2xf32, heads = 2>,
                       %W: !hgraph.weight<edge, 8x4xf32>,
                       %K: !hgraph.weight<node, 2x4x2xf32>,
                       %hk: !hgraph.node<8xf32, heads = 2>,
                       %dk: !hgraph.node<4xf32, heads = 2>) {
  // CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<8xf32>
  %0 = hgraph.typed_linear %W, %dz from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<8xf32>
  // CHECK: hgraph.aggregate sum %{{.*}} to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %1 = hgraph.aggregate sum %0 to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  // CHECK: hgraph.aggregate sum %{{.*}} : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %2 = hgraph.aggregate sum %0 to dst : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  // CHECK: hgraph.weight_grad %{{.*}} from src, %{{.*}} : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %3 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  // CHECK: hgraph.weight_grad %{{.*}} from node, %{{.*}} : !hgraph.node<8xf32, heads = 2>, !hgraph.node<4xf32, heads = 2> -> !hgraph.weight<node, 2x4x2xf32>
  %4 = hgraph.weight_grad %hk from node, %dk : !hgraph.node<8xf32, heads = 2>, !hgraph.node<4xf32, heads = 2> -> !hgraph.weight<node, 2x4x2xf32>
  // CHECK: hgraph.type_sum %{{.*}} : !hgraph.edge<4xf32> -> !hgraph.weight<edge, 4xf32>
  %5 = hgraph.type_sum %dz : !hgraph.edge<4xf32> -> !hgraph.weight<edge, 4xf32>
  // CHECK: hgraph.zeros : !hgraph.weight<edge, 8x4xf32>
  %6 = hgraph.zeros : !hgraph.weight<edge, 8x4xf32>
  // CHECK: hgraph.zeros : !hgraph.node<8xf32>
  %7 = hgraph.zeros : !hgraph.node<8xf32>
  // CHECK: hgraph.degree_norm %{{.*}} : !hgraph.graph -> !hgraph.edge<1xf32>
  %8 = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  // CHECK: hgraph.slice %{{.*}} offset 0 : !hgraph.edge<2xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  // CHECK: hgraph.slice %{{.*}} offset 1 : !hgraph.edge<8xf32> -> !hgraph.edge<3xf32>
  %9 = hgraph.slice %x offset 0 : !hgraph.edge<2xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %10 = hgraph.slice %0 offset 1 : !hgraph.edge<8xf32> -> !hgraph.edge<3xf32>
  // CHECK: hgraph.equal %{{.*}}, %{{.*}} : !hgraph.edge<2xf32, heads = 2>
  %11 = hgraph.equal %x, %da : !hgraph.edge<2xf32, heads = 2>
  // CHECK: hgraph.leaky_relu_grad %{{.*}}, %{{.*}} alpha 2.000000e-01 : !hgraph.edge<2xf32, heads = 2>
  %12 = hgraph.leaky_relu_grad %da, %x alpha 2.000000e-01 : !hgraph.edge<2xf32, heads = 2>
  // CHECK: hgraph.gelu_grad %{{.*}}, %{{.*}} : !hgraph.edge<2xf32, heads = 2>
  %g12 = hgraph.gelu_grad %da, %x : !hgraph.edge<2xf32, heads = 2>
  // CHECK: hgraph.add %{{.*}}, %{{.*}} : !hgraph.weight<edge, 8x4xf32>
  %13 = hgraph.add %3, %6 : !hgraph.weight<edge, 8x4xf32>
  hgraph.return
}
