// RUN: hector-opt %s -split-input-file --hgraph-compact-materialization | FileCheck %s
// RUN: hector-opt %s -split-input-file --hgraph-compact-materialization="num-edges=100 num-pairs=99" | FileCheck %s --check-prefix=DENSE
// RUN: hector-opt %s -split-input-file --hgraph-compact-materialization="num-edges=100 num-pairs=60 num-nodes=7" | FileCheck %s --check-prefix=SPARSE
// RUN: not hector-opt %s --hgraph-compact-materialization="num-edges=10 num-pairs=11" 2>&1 | FileCheck %s --check-prefix=SIZES

// SIZES: error: hgraph-compact-materialization: need 0 <= num-pairs <= num-edges, got num-pairs=11 num-edges=10

// RGCN's message depends only on (source, edge type): one GEMM row per
// unique pair; the relation norm depends on the destination and is read
// per edge.

// CHECK-LABEL: hgraph.func @rgcn
// CHECK: hgraph.typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>}
// CHECK: hgraph.relation_norm
// CHECK-NOT: materialization
// DENSE-LABEL: hgraph.func @rgcn
// DENSE-NOT: materialization
// SPARSE-LABEL: hgraph.func @rgcn
// SPARSE: #hgraph.materialization<compact>
hgraph.func @rgcn(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %W: !hgraph.weight<edge, 16x16xf32>) -> !hgraph.node<16xf32> {
  %msg = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %norm = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %scaled = hgraph.scale %norm, %msg : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %agg = hgraph.aggregate sum %scaled : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %agg : !hgraph.node<16xf32>
}

// -----

// Where the pass must not fire: a node-typed or single weight read at the
// source already runs once per node; an edge-typed weight from dst depends
// on the destination; an explicit layout is kept.

// CHECK-LABEL: hgraph.func @not_compacted
// DENSE-LABEL: hgraph.func @not_compacted
// CHECK: hgraph.typed_linear %{{.*}} from src : !hgraph.weight<node
// CHECK: hgraph.typed_linear %{{.*}} from src : !hgraph.weight<single
// CHECK: hgraph.typed_linear %{{.*}} from dst : !hgraph.weight<edge
// CHECK: hgraph.typed_linear %{{.*}} from src {hgraph.materialization = #hgraph.materialization<vanilla>}
// CHECK-NOT: compact
hgraph.func @not_compacted(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %K: !hgraph.weight<node, 16x16xf32>,
                           %S: !hgraph.weight<single, 16x16xf32>, %W: !hgraph.weight<edge, 16x16xf32>)
    -> (!hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>) {
  %k = hgraph.typed_linear %K, %h from src : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.typed_linear %S, %h from src : !hgraph.weight<single, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %t = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %v = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %k, %s, %t, %v : !hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32>
}

// -----

// Maps from edges: compact when their input is (its rows are pair rows, so
// the lowering writes pair rows), not when the input is per edge or depends
// on the destination.

// CHECK-LABEL: hgraph.func @from_edge
// CHECK: %[[Z:.*]] = hgraph.typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>}
// CHECK: hgraph.typed_linear %{{.*}}, %[[Z]] from edge {hgraph.materialization = #hgraph.materialization<compact>}
// CHECK: %[[V:.*]] = hgraph.typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<vanilla>}
// CHECK: hgraph.typed_linear %{{.*}}, %[[V]] from edge :
// CHECK: hgraph.typed_linear %{{.*}}, %{{.*}} from edge :
hgraph.func @from_edge(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %x: !hgraph.edge<16xf32>,
                       %W: !hgraph.weight<edge, 16x16xf32>, %S: !hgraph.weight<single, 16x8xf32>)
    -> (!hgraph.edge<8xf32>, !hgraph.edge<8xf32>, !hgraph.edge<8xf32>) {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %y = hgraph.typed_linear %S, %z from edge : !hgraph.weight<single, 16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  %v = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %w = hgraph.typed_linear %S, %v from edge : !hgraph.weight<single, 16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  %u = hgraph.typed_linear %S, %x from edge : !hgraph.weight<single, 16x8xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<8xf32>
  hgraph.return %y, %w, %u : !hgraph.edge<8xf32>, !hgraph.edge<8xf32>, !hgraph.edge<8xf32>
}

// -----

// A backward function: the recomputed forward map is compacted; gradients
// stay per edge (they depend on the destination); the weight gradient from
// the source of an edge-typed weight sums its rows per pair first. Not a
// weight gradient from the destination, nor of a single weight, nor when
// nearly every edge is its own pair.

// CHECK-LABEL: hgraph.func @rgcn_bwd
// CHECK: %[[Z:.*]] = hgraph.typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>}
// CHECK: %[[D:.*]] = hgraph.gather %{{.*}} from dst
// CHECK: hgraph.typed_linear %{{.*}}, %[[D]] from edge transpose :
// CHECK: hgraph.weight_grad %{{.*}} from src, %[[D]] {hgraph.materialization = #hgraph.materialization<compact>} :
// CHECK: hgraph.weight_grad %{{.*}} from dst, %[[D]] :
// CHECK: hgraph.weight_grad %{{.*}} from node, %{{.*}} :
// DENSE-LABEL: hgraph.func @rgcn_bwd
// DENSE-NOT: materialization
hgraph.func @rgcn_bwd(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %W: !hgraph.weight<edge, 16x16xf32>,
                      %dout: !hgraph.node<16xf32>) -> (!hgraph.edge<16xf32>, !hgraph.node<16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<single, 16x16xf32>) {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %d = hgraph.gather %dout from dst : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %dx = hgraph.typed_linear %W, %d from edge transpose : !hgraph.weight<edge, 16x16xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %dh = hgraph.aggregate sum %dx to src : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  %dW = hgraph.weight_grad %h from src, %d : !hgraph.node<16xf32>, !hgraph.edge<16xf32> -> !hgraph.weight<edge, 16x16xf32>
  %dWt = hgraph.weight_grad %h from dst, %d : !hgraph.node<16xf32>, !hgraph.edge<16xf32> -> !hgraph.weight<edge, 16x16xf32>
  %dW0 = hgraph.weight_grad %h from node, %dout : !hgraph.node<16xf32>, !hgraph.node<16xf32> -> !hgraph.weight<single, 16x16xf32>
  hgraph.return %z, %dh, %dW, %dWt, %dW0 : !hgraph.edge<16xf32>, !hgraph.node<16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<single, 16x16xf32>
}

// -----

// A saved value of a training forward that is now compact is handed to the
// backward of the same primal per pair: the `saved` result and the backward
// argument of that name become compact. Outputs, other functions' arguments
// and values that stay per edge are left as they are.

// CHECK-LABEL: hgraph.func @f_fwd
// CHECK-SAME: -> (!hgraph.edge<8xf32> {hgraph.name = "result0", hgraph.role = "output"}, !hgraph.edge<8xf32> {hgraph.materialization = #hgraph.materialization<compact>, hgraph.name = "saved0", hgraph.role = "saved"}, !hgraph.edge<8xf32> {hgraph.name = "saved1", hgraph.role = "saved"})
// CHECK-LABEL: hgraph.func @f_bwd
// CHECK-SAME: %{{.*}}: !hgraph.edge<8xf32> {hgraph.materialization = #hgraph.materialization<compact>, hgraph.name = "saved0", hgraph.role = "saved"}, %{{.*}}: !hgraph.edge<8xf32> {hgraph.name = "saved1", hgraph.role = "saved"}
// CHECK-LABEL: hgraph.func @other_bwd
// CHECK-SAME: %{{.*}}: !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"})
hgraph.func @f_fwd(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %W: !hgraph.weight<edge, 8x8xf32>)
    -> (!hgraph.edge<8xf32> {hgraph.name = "result0", hgraph.role = "output"},
        !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"},
        !hgraph.edge<8xf32> {hgraph.name = "saved1", hgraph.role = "saved"})
    attributes {hgraph.kind = "training_forward", hgraph.primal = "f"} {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %t = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return %z, %z, %t : !hgraph.edge<8xf32>, !hgraph.edge<8xf32>, !hgraph.edge<8xf32>
}
hgraph.func @f_bwd(%g: !hgraph.graph, %s0: !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"},
                   %s1: !hgraph.edge<8xf32> {hgraph.name = "saved1", hgraph.role = "saved"})
    -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"})
    attributes {hgraph.kind = "training_backward", hgraph.primal = "f"} {
  %sum = hgraph.add %s0, %s1 : !hgraph.edge<8xf32>
  %d = hgraph.aggregate sum %sum : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %d : !hgraph.node<8xf32>
}
hgraph.func @other_bwd(%g: !hgraph.graph, %s0: !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"})
    -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"})
    attributes {hgraph.kind = "training_backward", hgraph.primal = "other"} {
  %d = hgraph.aggregate sum %s0 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %d : !hgraph.node<8xf32>
}
