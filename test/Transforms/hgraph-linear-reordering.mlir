// RUN: hector-opt %s -split-input-file --hgraph-linear-reordering | FileCheck %s
// RUN: hector-opt %s -split-input-file --hgraph-linear-reordering="typed-endpoints=true" | FileCheck %s --check-prefix=TYPED
// RUN: hector-opt %s -split-input-file --hgraph-linear-reordering="typed-endpoints=true num-nodes=1000 num-edge-types=500" | FileCheck %s --check-prefix=FEWNODES
// RUN: hector-opt %s -split-input-file --hgraph-linear-reordering="ignore-cost=true" | FileCheck %s --check-prefix=FORCE
// Before autodiff (hectorc --training): only products of a matrix and a
// vector indexed alike, which autodiff differentiates.
// RUN: hector-opt %s -split-input-file --hgraph-linear-reordering="typed-endpoints=true differentiable=true" | FileCheck %s --check-prefix=DIFF

// RGAT, one head: b·(W h_t) becomes (W·b)·h_t and the per-edge GEMM from
// dst disappears. a·(W h_s) keeps its GEMM, which the message needs anyway:
// the rewrite would only add R·d·d multiply-adds (done with ignore-cost).

// CHECK-LABEL: hgraph.func @rgat
// CHECK-SAME: (%{{.*}}: !hgraph.graph, %[[H:.*]]: !hgraph.node<16xf32>, %[[W:.*]]: !hgraph.weight<edge, 16x16xf32>, %[[A:.*]]: !hgraph.weight<edge, 16xf32>, %[[B:.*]]: !hgraph.weight<edge, 16xf32>)
// CHECK: %[[Z:.*]] = hgraph.typed_linear %[[W]], %[[H]] from src
// CHECK-NOT: from dst :
// CHECK: %[[AV:.*]] = hgraph.typed_vector %[[A]]
// CHECK: %[[SA:.*]] = hgraph.dot %[[Z]], %[[AV]]
// CHECK: %[[WB:.*]] = hgraph.weight_product %[[W]], %[[B]] : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>
// CHECK: %[[HT:.*]] = hgraph.gather %[[H]] from dst
// CHECK: %[[WBV:.*]] = hgraph.typed_vector %[[WB]]
// CHECK: %[[SB:.*]] = hgraph.dot %[[HT]], %[[WBV]] : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
// CHECK: hgraph.add %[[SA]], %[[SB]]
// CHECK: hgraph.scale %{{.*}}, %[[Z]]

// DIFF-LABEL: hgraph.func @rgat
// DIFF-NOT: from dst :
// DIFF: hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>

// FORCE-LABEL: hgraph.func @rgat
// FORCE: hgraph.typed_linear {{.*}} from src
// FORCE-COUNT-2: hgraph.weight_product
// FORCE-NOT: hgraph.typed_linear
hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                  %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>, %b: !hgraph.weight<edge, 16xf32>) -> !hgraph.node<16xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %sb = hgraph.dot %bv, %zt : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %sum : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %out : !hgraph.node<16xf32>
}

// -----

// Per-head weights: head k of the dot reads head k of h only, and the
// product is the block-diagonal W_k·b_k.

// CHECK-LABEL: hgraph.func @per_head
// CHECK: %[[P:.*]] = hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 2x8x4xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 16xf32>
// CHECK: %[[X:.*]] = hgraph.gather %{{.*}} from dst : !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
// CHECK: %[[PV:.*]] = hgraph.typed_vector %[[P]] : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32, heads = 2>
// CHECK: hgraph.dot %[[X]], %[[PV]] : !hgraph.edge<16xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
// CHECK-NOT: hgraph.typed_linear
hgraph.func @per_head(%g: !hgraph.graph, %h: !hgraph.node<16xf32, heads = 2>,
                      %W: !hgraph.weight<edge, 2x8x4xf32>, %b: !hgraph.weight<edge, 8xf32>) -> !hgraph.edge<2xf32, heads = 2> {
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 2x8x4xf32>, !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %s = hgraph.dot %zt, %bv : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %s : !hgraph.edge<2xf32, heads = 2>
}

// -----

// A matrix weight with 2 heads: head k of the dot would need all of h, so
// dot(x, W·b) is not exact; rows of two heads are not the one-head rows of
// the head-block rule (next case) either: nothing fires, whatever the cost.

// CHECK-LABEL: hgraph.func @mixed_heads
// CHECK-NOT: hgraph.weight_product
// FORCE-LABEL: hgraph.func @mixed_heads
// FORCE-NOT: hgraph.weight_product
hgraph.func @mixed_heads(%g: !hgraph.graph, %h: !hgraph.node<16xf32, heads = 2>,
                         %W: !hgraph.weight<edge, 16x16xf32>, %b: !hgraph.weight<edge, 16xf32>) -> !hgraph.edge<2xf32, heads = 2> {
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32, heads = 2>
  %s = hgraph.dot %zt, %bv : !hgraph.edge<16xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %s : !hgraph.edge<2xf32, heads = 2>
}

// -----

// RGAT with 2 heads and a full matrix W: head k of b·(W h_t) is
// h_t·(W[:, block k]·b[block k]), so the dst side becomes one typed linear
// map with the [16, 2] weight W·b cut into heads (R·16·16 multiply-adds once
// instead of E·16·16). The src side keeps its GEMM, shared with the message.

// CHECK-LABEL: hgraph.func @head_blocks
// CHECK-SAME: %[[H:[^:]*]]: !hgraph.node<16xf32>, %[[W:[^:]*]]: !hgraph.weight<edge, 16x16xf32>, %[[A:[^:]*]]: !hgraph.weight<edge, 16xf32>, %[[B:[^:]*]]: !hgraph.weight<edge, 16xf32>
// CHECK: %[[Z:.*]] = hgraph.typed_linear %[[W]], %[[H]] from src
// CHECK: hgraph.dot %[[Z]], %{{.*}} : !hgraph.edge<16xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
// CHECK: %[[WB:.*]] = hgraph.weight_product %[[W]], %[[B]] heads 2 : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16x2xf32>
// CHECK: %[[SB:.*]] = hgraph.typed_linear %[[WB]], %[[H]] from dst : !hgraph.weight<edge, 16x2xf32>, !hgraph.node<16xf32> -> !hgraph.edge<2xf32, heads = 2>
// CHECK-NOT: hgraph.typed_linear %[[W]], %[[H]] from dst
// CHECK: hgraph.add %{{.*}}, %[[SB]]

// Autodiff has the rule for this product (weight_outer and weight_product
// with heads): it fires before autodiff too.
// DIFF-LABEL: hgraph.func @head_blocks
// DIFF: hgraph.weight_product %{{.*}}, %{{.*}} heads 2 : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16x2xf32>
// DIFF-NEXT: hgraph.typed_linear %{{.*}} from dst : !hgraph.weight<edge, 16x2xf32>

// Forced, the src side is rewritten too, next to the message's GEMM.
// FORCE-LABEL: hgraph.func @head_blocks
// FORCE-COUNT-2: hgraph.weight_product {{.*}} heads 2
hgraph.func @head_blocks(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                         %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>, %b: !hgraph.weight<edge, 16xf32>) -> !hgraph.node<16xf32, heads = 2> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32, heads = 2>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32, heads = 2>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32, heads = 2>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32, heads = 2>
  %sa = hgraph.dot %z, %av : !hgraph.edge<16xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<16xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<2xf32, heads = 2>
  %alpha = hgraph.edge_softmax %sum : !hgraph.edge<2xf32, heads = 2>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<16xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32, heads = 2> -> !hgraph.node<16xf32, heads = 2>
  hgraph.return %out : !hgraph.node<16xf32, heads = 2>
}

// -----

// The transposed map of autodiff's input gradients: dot(x·Wᵀ, a) = dot(x, a·W).

// CHECK-LABEL: hgraph.func @transposed
// FORCE-LABEL: hgraph.func @transposed
// CHECK-SAME: %[[X:[^:]*]]: !hgraph.edge<8xf32>, %[[W:[^:]*]]: !hgraph.weight<edge, 16x8xf32>, %[[A:[^:]*]]: !hgraph.weight<edge, 16xf32>
// CHECK: %[[P:.*]] = hgraph.weight_product %[[A]], %[[W]] : !hgraph.weight<edge, 16xf32>, !hgraph.weight<edge, 16x8xf32> -> !hgraph.weight<edge, 8xf32>
// CHECK: %[[PV:.*]] = hgraph.typed_vector %[[P]] : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32>
// CHECK: hgraph.dot %[[X]], %[[PV]]
// CHECK-NOT: hgraph.typed_linear
hgraph.func @transposed(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>,
                        %W: !hgraph.weight<edge, 16x8xf32>, %a: !hgraph.weight<edge, 16xf32>) -> !hgraph.edge<1xf32> {
  %y = hgraph.typed_linear %W, %x from edge transpose : !hgraph.weight<edge, 16x8xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.dot %y, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}

// -----

// A node-typed weight: with a single vector the product stays node-typed and
// is read at the endpoint; with an edge-typed vector it needs the node type
// of the edge type's source, which only typed endpoints make one.

// CHECK-LABEL: hgraph.func @node_typed
// CHECK: %[[K:.*]] = hgraph.typed_linear %{{.*}} from src
// CHECK: hgraph.dot %[[K]]
// CHECK: %[[P:.*]] = hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<node, 16x16xf32>, !hgraph.weight<single, 16xf32> -> !hgraph.weight<node, 16xf32>
// CHECK: %[[X:.*]] = hgraph.gather %{{.*}} from dst
// CHECK: %[[PV:.*]] = hgraph.typed_vector %[[P]] : !hgraph.weight<node, 16xf32> -> !hgraph.node<16xf32>
// CHECK: %[[PE:.*]] = hgraph.gather %[[PV]] from dst
// CHECK: hgraph.dot %[[X]], %[[PE]]

// DIFF-LABEL: hgraph.func @node_typed
// DIFF-NOT: hgraph.weight_product
// DIFF: hgraph.return

// TYPED-LABEL: hgraph.func @node_typed
// TYPED: hgraph.weight_product %{{.*}}, %{{.*}} node_of src : !hgraph.weight<node, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>
// TYPED: hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<node, 16x16xf32>, !hgraph.weight<single, 16xf32>
// TYPED-NOT: hgraph.typed_linear
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

// -----

// HGT's key chain h_s K_τ(s) W^att_φ: one edge-typed K·W^att with typed
// endpoints, when N·d·d (the per-node K GEMM) outweighs R·d·d·d.

// CHECK-LABEL: hgraph.func @chain
// CHECK-NOT: hgraph.weight_product

// TYPED-LABEL: hgraph.func @chain
// TYPED-SAME: %[[H:[^:]*]]: !hgraph.node<16xf32>, %[[K:[^:]*]]: !hgraph.weight<node, 16x16xf32>, %[[WATT:[^:]*]]: !hgraph.weight<edge, 1x16x16xf32>
// TYPED: %[[P:.*]] = hgraph.weight_product %[[K]], %[[WATT]] node_of src : !hgraph.weight<node, 16x16xf32>, !hgraph.weight<edge, 1x16x16xf32> -> !hgraph.weight<edge, 16x16xf32>
// TYPED: %[[Y:.*]] = hgraph.typed_linear %[[P]], %[[H]] from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
// TYPED: hgraph.return %[[Y]]

// FEWNODES-LABEL: hgraph.func @chain
// FEWNODES-NOT: hgraph.weight_product

// DIFF-LABEL: hgraph.func @chain
// DIFF-NOT: hgraph.weight_product
hgraph.func @chain(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                   %K: !hgraph.weight<node, 16x16xf32>, %Watt: !hgraph.weight<edge, 1x16x16xf32>) -> !hgraph.edge<16xf32> {
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.node<16xf32>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 1x16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %katt : !hgraph.edge<16xf32>
}

// -----

// An edge-level chain (edge-typed then single weight), and the scaled typed
// vector that autodiff feeds a transposed map: (s·b)·Wᵀ = s·(W·b).

// CHECK-LABEL: hgraph.func @edge_chain
// CHECK-SAME: %[[H:[^:]*]]: !hgraph.node<16xf32>, %[[S:[^:]*]]: !hgraph.edge<1xf32>, %[[W1:[^:]*]]: !hgraph.weight<edge, 16x8xf32>, %[[W2:[^:]*]]: !hgraph.weight<single, 8x4xf32>, %[[W:[^:]*]]: !hgraph.weight<edge, 16x16xf32>, %[[B:[^:]*]]: !hgraph.weight<edge, 16xf32>
// CHECK: %[[P:.*]] = hgraph.weight_product %[[W1]], %[[W2]] : {{.*}} -> !hgraph.weight<edge, 16x4xf32>
// CHECK: %[[Y:.*]] = hgraph.typed_linear %[[P]], %[[H]] from src : !hgraph.weight<edge, 16x4xf32>, !hgraph.node<16xf32> -> !hgraph.edge<4xf32>
// CHECK: %[[WB:.*]] = hgraph.weight_product %[[W]], %[[B]] : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>
// CHECK: %[[WBV:.*]] = hgraph.typed_vector %[[WB]]
// CHECK: %[[DX:.*]] = hgraph.scale %[[S]], %[[WBV]]
// CHECK: hgraph.aggregate sum %[[DX]]
// CHECK: hgraph.return %[[Y]],

// Whatever the sizes, an edge-typed·single chain from src never runs more
// rows than before.
// FEWNODES-LABEL: hgraph.func @edge_chain
// FEWNODES: hgraph.weight_product

// DIFF-LABEL: hgraph.func @edge_chain
// DIFF-NOT: !hgraph.weight<edge, 16x4xf32>
// DIFF: hgraph.weight_product %{{.*}}, %{{.*}} : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>
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
