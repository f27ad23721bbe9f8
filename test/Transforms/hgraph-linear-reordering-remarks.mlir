// RUN: hector-opt %s --hgraph-linear-reordering="remarks=true num-nodes=1000 num-edges=8000 num-edge-types=10" -verify-diagnostics -split-input-file
// RUN: hector-opt %s --hgraph-linear-reordering -split-input-file | FileCheck %s
// RUN: not hector-opt %s --hgraph-linear-reordering="num-edges=-5" 2>&1 | FileCheck %s --check-prefix=SIZES

// With `remarks`, every candidate reports its symbolic multiply-add counts
// (N nodes, E edges, P pairs, R edge types, T node types) and the decision,
// taken at the given sizes.

// SIZES: error: hgraph-linear-reordering: graph sizes must be non-negative

hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                  %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>, %b: !hgraph.weight<edge, 16xf32>) -> !hgraph.node<16xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  // expected-remark @+1 {{linear reordering (dot of a typed linear map with a typed vector): multiply-adds 16*E before, 16*E + 256*R after: kept}}
  %sa = hgraph.dot %z, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  // expected-remark @+1 {{linear reordering (dot of a typed linear map with a typed vector): multiply-adds 272*E before, 16*E + 256*R after: rewritten}}
  %sb = hgraph.dot %bv, %zt : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %sum : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %out : !hgraph.node<16xf32>
}

// -----

// A compact map runs P rows (and a map from edges of compact rows too; the
// combined map stays compact); a per-node one N. The K·W^att chain is not a
// candidate here: node-typed times edge-typed needs typed-endpoints.

hgraph.func @rows(%g: !hgraph.graph, %h: !hgraph.node<16xf32>,
                  %W1: !hgraph.weight<edge, 16x8xf32>, %W2: !hgraph.weight<edge, 8x8xf32>,
                  %K: !hgraph.weight<node, 16x16xf32>, %Watt: !hgraph.weight<edge, 16x16xf32>,
                  %V: !hgraph.weight<single, 16x4xf32>, %c: !hgraph.weight<single, 4xf32>) -> (!hgraph.edge<8xf32>, !hgraph.edge<16xf32>, !hgraph.edge<1xf32>) {
  %y1 = hgraph.typed_linear %W1, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x8xf32>, !hgraph.node<16xf32> -> !hgraph.edge<8xf32>
  // expected-remark @+1 {{linear reordering (two chained typed linear maps): multiply-adds 192*P before, 128*P + 1024*R after: rewritten}}
  %y2 = hgraph.typed_linear %W2, %y1 from edge : !hgraph.weight<edge, 8x8xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.node<16xf32>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %v = hgraph.typed_linear %V, %h from dst : !hgraph.weight<single, 16x4xf32>, !hgraph.node<16xf32> -> !hgraph.edge<4xf32>
  %cv = hgraph.typed_vector %c : !hgraph.weight<single, 4xf32> -> !hgraph.edge<4xf32>
  // expected-remark @+1 {{linear reordering (dot of a typed linear map with a typed vector): multiply-adds 64*N + 4*E before, 16*E + 64 after: kept}}
  %s = hgraph.dot %v, %cv : !hgraph.edge<4xf32> -> !hgraph.edge<1xf32>
  // CHECK-LABEL: hgraph.func @rows
  // CHECK: %[[P:.*]] = hgraph.weight_product
  // CHECK: hgraph.typed_linear %[[P]], %{{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>}
  hgraph.return %y2, %katt, %s : !hgraph.edge<8xf32>, !hgraph.edge<16xf32>, !hgraph.edge<1xf32>
}
