// RUN: hector-opt %s -hgraph-autodiff -split-input-file | FileCheck %s
// RUN: hector-opt %s -hgraph-autodiff='save=all' -split-input-file | FileCheck %s --check-prefix=ALL
// RUN: hector-opt %s -hgraph-autodiff='save=none' -split-input-file | FileCheck %s --check-prefix=NONE

// A typed linear map read at the source, summed into destinations.
// CHECK-LABEL: hgraph.func @linear(
// CHECK-SAME: attributes {hgraph.kind = "inference"}
// CHECK-LABEL: hgraph.func @linear_fwd(
// CHECK-SAME: -> (!hgraph.node<4xf32> {hgraph.name = "result0", hgraph.role = "output"})
// CHECK-SAME: attributes {hgraph.kind = "training_forward", hgraph.primal = "linear"}
// CHECK-LABEL: hgraph.func @linear_bwd(
// CHECK-SAME: %[[G:.*]]: !hgraph.graph, %[[H:.*]]: !hgraph.node<8xf32> {hgraph.name = "h"}, %[[W:.*]]: !hgraph.weight<edge, 8x4xf32> {hgraph.name = "W"}, %[[D:.*]]: !hgraph.node<4xf32> {hgraph.name = "d_result0", hgraph.role = "grad_output"})
// CHECK-SAME: -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"}, !hgraph.weight<edge, 8x4xf32> {hgraph.name = "d_W", hgraph.role = "grad"})
// CHECK-SAME: attributes {hgraph.kind = "training_backward", hgraph.primal = "linear"}
// CHECK:      %[[DM:.*]] = hgraph.gather %[[D]] from dst
// CHECK:      %[[DX:.*]] = hgraph.typed_linear %[[W]], %[[DM]] from edge transpose
// CHECK:      %[[DH:.*]] = hgraph.aggregate sum %[[DX]] to src
// CHECK:      %[[DW:.*]] = hgraph.weight_grad %[[H]] from src, %[[DM]]
// CHECK:      hgraph.return %[[DH]], %[[DW]]
hgraph.func @linear(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                    %W: !hgraph.weight<edge, 8x4xf32> {hgraph.name = "W"}) -> !hgraph.node<4xf32> {
  %m = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}

// -----

// Weights that do not depend on the edge type: edge gradients are summed per
// node before the (single) GEMM, for the input and for the weight.
// CHECK-LABEL: hgraph.func @untyped_bwd(
// CHECK:      %[[PER:.*]] = hgraph.aggregate sum %{{.*}} to src : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
// CHECK:      hgraph.typed_linear %{{.*}}, %[[PER]] from node transpose
// CHECK:      hgraph.weight_grad %{{.*}} from node, %[[PER]]
hgraph.func @untyped(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                     %W: !hgraph.weight<node, 8x4xf32>) -> !hgraph.node<4xf32> {
  %m = hgraph.typed_linear %W, %h from src : !hgraph.weight<node, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}

// -----

// Attention: what is saved depends on the policy. By default what the
// forward stores anyway: the GEMM result, the softmax and the scores it
// normalises (the leaky ReLU's result, whose sign gives the slope for a
// non-negative slope), so that nothing per edge is recomputed; 'all' the
// same here; 'none' saves nothing and recomputes the GEMM and the slope
// from the score's input.
// CHECK-LABEL: hgraph.func @attention_fwd(
// CHECK-SAME: {hgraph.name = "saved0", hgraph.role = "saved"}, !hgraph.edge<4xf32> {hgraph.name = "saved1", hgraph.role = "saved"}, !hgraph.edge<1xf32> {hgraph.name = "saved2", hgraph.role = "saved"})
// CHECK:      %[[SCORE:.*]] = hgraph.leaky_relu
// CHECK:      hgraph.return %{{.*}}, %{{.*}}, %{{.*}}, %[[SCORE]]
// CHECK-LABEL: hgraph.func @attention_bwd(
// CHECK-SAME: !hgraph.edge<1xf32> {hgraph.name = "saved0", hgraph.role = "saved"}
// CHECK-SAME: !hgraph.edge<4xf32> {hgraph.name = "saved1", hgraph.role = "saved"}
// CHECK-SAME: %[[SAVED2:[^:]*]]: !hgraph.edge<1xf32> {hgraph.name = "saved2", hgraph.role = "saved"}
// CHECK:      hgraph.dot
// CHECK:      hgraph.leaky_relu_grad %{{.*}}, %[[SAVED2]] alpha
// CHECK-NOT:  hgraph.edge_softmax
// CHECK-NOT:  hgraph.leaky_relu
// CHECK:      hgraph.return
// ALL-LABEL:  hgraph.func @attention_bwd(
// ALL-SAME:   {hgraph.name = "saved2", hgraph.role = "saved"}
// NONE-LABEL: hgraph.func @attention_fwd(
// NONE-SAME:  -> (!hgraph.node<4xf32> {hgraph.name = "result0", hgraph.role = "output"})
// NONE-LABEL: hgraph.func @attention_bwd(
// NONE-NOT:   hgraph.role = "saved"
// NONE:       hgraph.typed_linear %{{.*}}, %{{.*}} from src :
// NONE:       %[[PRE:.*]] = hgraph.dot
// NONE:       hgraph.edge_softmax
// NONE:       hgraph.leaky_relu_grad %{{.*}}, %[[PRE]] alpha
hgraph.func @attention(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                       %W: !hgraph.weight<edge, 8x4xf32>, %a: !hgraph.weight<edge, 4xf32>) -> !hgraph.node<4xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32>
  %s = hgraph.dot %z, %av : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  %l = hgraph.leaky_relu %s alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %l : !hgraph.edge<1xf32>
  %m = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}

// -----

// An argument the result does not depend on gets a zero gradient; the
// weight used twice gets the sum of both contributions.
// CHECK-LABEL: hgraph.func @unused_bwd(
// CHECK-DAG:  %[[Z:.*]] = hgraph.zeros : !hgraph.node<4xf32>
// CHECK-DAG:  %[[SUM:.*]] = hgraph.add %{{.*}}, %{{.*}} : !hgraph.weight<single, 4x4xf32>
// CHECK:      hgraph.return %{{.*}}, %[[Z]], %[[SUM]]
hgraph.func @unused(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %u: !hgraph.node<4xf32>,
                    %W: !hgraph.weight<single, 4x4xf32>) -> !hgraph.node<4xf32> {
  %a = hgraph.typed_linear %W, %h from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  %b = hgraph.typed_linear %W, %a from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %b : !hgraph.node<4xf32>
}

// -----

// A weight product of a matrix and a vector (linear reordering before
// autodiff): R = W · a, dW = dR ⊗ a (weight_outer), da = dR · W (a row
// times the matrix). The product is recomputed in the backward, not saved.
// CHECK-LABEL: hgraph.func @reordered_attention_bwd
// CHECK: %[[WA:.*]] = hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4xf32>
// CHECK: %[[DR:.*]] = hgraph.type_sum
// CHECK-DAG: hgraph.weight_outer %[[DR]], %{{.*}} : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x4xf32>
// CHECK-DAG: hgraph.weight_product %[[DR]], %{{.*}} : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 4x4xf32> -> !hgraph.weight<edge, 4xf32>
hgraph.func @reordered_attention(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"}, %W: !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W"}, %a: !hgraph.weight<edge, 4xf32> {hgraph.name = "a"}) -> !hgraph.edge<1xf32> {
  %wa = hgraph.weight_product %W, %a : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4xf32>
  %v = hgraph.typed_vector %wa : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32>
  %x = hgraph.gather %h from dst : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %s = hgraph.dot %x, %v : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}

// -----

// The product of a matrix and a vector cut into 2 head blocks (linear
// reordering of RGAT with 2 heads): R = W · b heads 2 ([4, 2]); its gradient
// dR is the weight gradient of the typed linear map, dW = dR ⊗ b heads 2
// (weight_outer), db = dR · W heads 2.
// CHECK-LABEL: hgraph.func @head_blocks_bwd
// CHECK: %[[WB:.*]] = hgraph.weight_product %{{.*}}, %{{.*}} heads 2 : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x2xf32>
// CHECK: %[[DR:.*]] = hgraph.weight_grad %{{.*}} from dst, %{{.*}} : !hgraph.node<4xf32>, !hgraph.edge<2xf32, heads = 2> -> !hgraph.weight<edge, 4x2xf32>
// CHECK-DAG: hgraph.weight_outer %[[DR]], %{{.*}} heads 2 : !hgraph.weight<edge, 4x2xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x4xf32>
// CHECK-DAG: hgraph.weight_product %[[DR]], %{{.*}} heads 2 : !hgraph.weight<edge, 4x2xf32>, !hgraph.weight<edge, 4x4xf32> -> !hgraph.weight<edge, 4xf32>
hgraph.func @head_blocks(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"}, %W: !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W"}, %b: !hgraph.weight<edge, 4xf32> {hgraph.name = "b"}) -> !hgraph.edge<2xf32, heads = 2> {
  %wb = hgraph.weight_product %W, %b heads 2 : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x2xf32>
  %s = hgraph.typed_linear %wb, %h from dst : !hgraph.weight<edge, 4x2xf32>, !hgraph.node<4xf32> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %s : !hgraph.edge<2xf32, heads = 2>
}

// -----

// A row vector times a matrix: R = a · W, da = W · dR, dW = a ⊗ dR.
// CHECK-LABEL: hgraph.func @row_times_matrix_bwd
// CHECK: %[[DR:.*]] = hgraph.type_sum
// CHECK-DAG: hgraph.weight_product %{{.*}}, %[[DR]] : !hgraph.weight<edge, 4x2xf32>, !hgraph.weight<edge, 2xf32> -> !hgraph.weight<edge, 4xf32>
// CHECK-DAG: hgraph.weight_outer %{{.*}}, %[[DR]] : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 2xf32> -> !hgraph.weight<edge, 4x2xf32>
hgraph.func @row_times_matrix(%g: !hgraph.graph, %h: !hgraph.node<2xf32> {hgraph.name = "h"}, %W: !hgraph.weight<edge, 4x2xf32> {hgraph.name = "W"}, %a: !hgraph.weight<edge, 4xf32> {hgraph.name = "a"}) -> !hgraph.edge<1xf32> {
  %aw = hgraph.weight_product %a, %W : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 4x2xf32> -> !hgraph.weight<edge, 2xf32>
  %v = hgraph.typed_vector %aw : !hgraph.weight<edge, 2xf32> -> !hgraph.edge<2xf32>
  %x = hgraph.gather %h from src : !hgraph.node<2xf32> -> !hgraph.edge<2xf32>
  %s = hgraph.dot %x, %v : !hgraph.edge<2xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}

// -----

// A negative slope flips the sign, so the slope of the backward is read
// from the leaky ReLU's input (recomputed), even where its result is saved.
// CHECK-LABEL: hgraph.func @negative_slope_bwd(
// CHECK:      %[[PRE:.*]] = hgraph.dot
// CHECK:      hgraph.leaky_relu_grad %{{.*}}, %[[PRE]] alpha -5.000000e-01
hgraph.func @negative_slope(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                            %W: !hgraph.weight<edge, 8x4xf32>, %a: !hgraph.weight<edge, 4xf32>) -> !hgraph.node<4xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 4xf32> -> !hgraph.edge<4xf32>
  %s = hgraph.dot %z, %av : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  %l = hgraph.leaky_relu %s alpha -5.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %l : !hgraph.edge<1xf32>
  %m = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}

// -----

// A per-edge dot product of 8-wide rows that the backward reads (HGT's k·q,
// for the gradient of the per-type scale μ) is saved by the default policy:
// recomputing it would read both rows of every edge again. `save=none`
// recomputes it. (The 4-wide dot of @negative_slope is recomputed.)
// CHECK-LABEL: hgraph.func @scaled_dot_fwd(
// CHECK:      %[[DOT:.*]] = hgraph.dot
// CHECK:      hgraph.return {{.*}}%[[DOT]]
// The backward's one dot is the softmax gradient's (d_out[dst] · v).
// CHECK-LABEL: hgraph.func @scaled_dot_bwd(
// CHECK-SAME: %{{[^:]*}}: !hgraph.edge<1xf32> {hgraph.name = "saved0", hgraph.role = "saved"}, %[[SAVED:[^:]*]]: !hgraph.edge<1xf32> {hgraph.name = "saved1", hgraph.role = "saved"}
// CHECK-COUNT-1: hgraph.dot
// CHECK-NOT:  hgraph.dot
// CHECK:      %[[DMU:.*]] = hgraph.mul %{{.*}}, %[[SAVED]]
// CHECK:      hgraph.type_sum %[[DMU]]
// NONE-LABEL: hgraph.func @scaled_dot_bwd(
// NONE-COUNT-2: hgraph.dot
hgraph.func @scaled_dot(%g: !hgraph.graph, %k: !hgraph.edge<8xf32>, %q: !hgraph.node<8xf32>,
                        %v: !hgraph.edge<8xf32>, %mu: !hgraph.weight<edge, 1xf32>) -> !hgraph.node<8xf32> {
  %qd = hgraph.gather %q from dst : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %d = hgraph.dot %k, %qd : !hgraph.edge<8xf32> -> !hgraph.edge<1xf32>
  %m0 = hgraph.typed_vector %mu : !hgraph.weight<edge, 1xf32> -> !hgraph.edge<1xf32>
  %t = hgraph.mul %d, %m0 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %t : !hgraph.edge<1xf32>
  %m = hgraph.scale %alpha, %v : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %o : !hgraph.node<8xf32>
}

// -----

// GELU: the gradient is dy·(Φ(x) + x·φ(x)), read from the input, which
// the result does not determine.
// CHECK-LABEL: hgraph.func @gelu_bwd(
// CHECK-SAME: %[[H:[^:]*]]: !hgraph.node<4xf32> {hgraph.name = "h"}
// CHECK-SAME: %[[D:[^:]*]]: !hgraph.node<4xf32> {hgraph.name = "d_result0", hgraph.role = "grad_output"}
// CHECK:      %[[DX:.*]] = hgraph.gelu_grad %[[D]], %[[H]] : !hgraph.node<4xf32>
// CHECK:      hgraph.return %[[DX]]
hgraph.func @gelu(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"}) -> !hgraph.node<4xf32> {
  %y = hgraph.gelu %h : !hgraph.node<4xf32>
  hgraph.return %y : !hgraph.node<4xf32>
}
