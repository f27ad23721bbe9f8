// RUN: hector-opt %s --hgraph-to-htmpl -split-input-file | FileCheck %s
// RUN: %python %hector_src_root/test/long_programs.py chain 100 | hector-opt --hgraph-to-htmpl | FileCheck %s --check-prefix=CUT

// Row expressions are DAGs: a value read twice is evaluated once in the
// traversal body (no canonicalize or CSE here to hide a repeat). Four
// levels of `add %v, %v` are four additions, not 2^4 - 1.

// CHECK-LABEL: func.func @doubling
// CHECK: htmpl.traversal edges
// CHECK-COUNT-1: memref.load
// CHECK-NOT: memref.load
// CHECK-COUNT-4: arith.addf
// CHECK-NOT: arith.addf
// CHECK: htmpl.accumulate add
hgraph.func @doubling(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) -> !hgraph.node<8xf32> {
  %v1 = hgraph.add %x, %x : !hgraph.edge<8xf32>
  %v2 = hgraph.add %v1, %v1 : !hgraph.edge<8xf32>
  %v3 = hgraph.add %v2, %v2 : !hgraph.edge<8xf32>
  %v4 = hgraph.add %v3, %v3 : !hgraph.edge<8xf32>
  %a = hgraph.aggregate sum %v4 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %a : !hgraph.node<8xf32>
}

// -----

// Swish twice, x * sigmoid(x): each step's input is loaded or computed
// once, read by both the sigmoid and the product.

// CHECK-LABEL: func.func @swish
// CHECK: htmpl.traversal edges
// CHECK: %[[X:.*]] = memref.load
// CHECK-NOT: memref.load
// CHECK: %[[N1:.*]] = arith.negf %[[X]]
// CHECK: %[[S1:.*]] = arith.divf
// CHECK: %[[Y:.*]] = arith.mulf %[[X]], %[[S1]]
// CHECK: arith.negf %[[Y]]
// CHECK: %[[S2:.*]] = arith.divf
// CHECK: %[[Z:.*]] = arith.mulf %[[Y]], %[[S2]]
// CHECK-NOT: arith.mulf
// CHECK: htmpl.accumulate add %[[Z]]
hgraph.func @swish(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) -> !hgraph.node<8xf32> {
  %s1 = hgraph.sigmoid %x : !hgraph.edge<8xf32>
  %y = hgraph.mul %x, %s1 : !hgraph.edge<8xf32>
  %s2 = hgraph.sigmoid %y : !hgraph.edge<8xf32>
  %z = hgraph.mul %y, %s2 : !hgraph.edge<8xf32>
  %a = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %a : !hgraph.node<8xf32>
}

// -----

// A per-head score read by two consumers inside a multi-head traversal is
// hoisted out of the feature loop once and read there.

// CHECK-LABEL: func.func @per_head
// CHECK: htmpl.traversal edges
// CHECK: scf.for %[[HEAD:.*]] =
// CHECK: %[[S:.*]] = memref.load %{{.*}}[%{{.*}}, %[[HEAD]]]
// CHECK: %[[E:.*]] = math.exp %[[S]]
// CHECK-NOT: math.exp
// CHECK: scf.for
// CHECK: arith.mulf %[[E]]
// CHECK: arith.mulf %[[E]]
// CHECK-NOT: math.exp
// CHECK: htmpl.accumulate add
hgraph.func @per_head(%g: !hgraph.graph, %s: !hgraph.edge<2xf32, heads = 2>,
                      %x: !hgraph.edge<8xf32, heads = 2>) -> !hgraph.node<8xf32, heads = 2> {
  %e = hgraph.exp %s : !hgraph.edge<2xf32, heads = 2>
  %a = hgraph.scale %e, %x : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %b = hgraph.scale %e, %a : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %r = hgraph.aggregate sum %b : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %r : !hgraph.node<8xf32, heads = 2>
}

// -----

// A per-edge scalar that loads three values (s, t, n at the destination)
// and is read by two ops that land in different traversals (an aggregation
// and a type_sum) is stored once by a traversal of its own; each reader
// loads it, one value per edge, instead of evaluating it again. With two
// loads (@shared_cheap_scalar) it is evaluated in each reader.

// CHECK-LABEL: func.func @shared_scalar
// CHECK: %[[C:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal edges {{.*}} outs(%[[C]] : memref<?x1xf32> as edge)
// CHECK: arith.subf
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK: htmpl.traversal edges {{.*}} ins(%[[C]] : memref<?x1xf32> as edge, %{{.*}} as src) outs(%{{.*}} as dst)
// CHECK-NOT: arith.subf
// CHECK: htmpl.traversal edges {{.*}} ins(%[[C]] : memref<?x1xf32> as edge, %{{.*}} as dst) outs(%{{.*}} as etype)
// CHECK-NOT: arith.subf
// CHECK: return
hgraph.func @shared_scalar(%g: !hgraph.graph, %s: !hgraph.edge<1xf32> {hgraph.name = "s"},
                           %t: !hgraph.edge<1xf32> {hgraph.name = "t"},
                           %n: !hgraph.node<1xf32> {hgraph.name = "n"},
                           %x: !hgraph.node<8xf32> {hgraph.name = "x"})
    -> (!hgraph.node<8xf32> {hgraph.name = "a"}, !hgraph.weight<edge, 8xf32> {hgraph.name = "w"}) {
  %nd = hgraph.gather %n from dst : !hgraph.node<1xf32> -> !hgraph.edge<1xf32>
  %m = hgraph.mul %t, %nd : !hgraph.edge<1xf32>
  %c = hgraph.sub %s, %m : !hgraph.edge<1xf32>
  %xs = hgraph.gather %x from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %xd = hgraph.gather %x from dst : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %ys = hgraph.scale %c, %xs : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %yd = hgraph.scale %c, %xd : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %a = hgraph.aggregate sum %ys : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %w = hgraph.type_sum %yd : !hgraph.edge<8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return %a, %w : !hgraph.node<8xf32>, !hgraph.weight<edge, 8xf32>
}

// -----

// CHECK-LABEL: func.func @shared_cheap_scalar
// CHECK-NOT: memref.alloc
// CHECK: htmpl.traversal edges {{.*}} outs(%{{.*}} as dst)
// CHECK: arith.subf
// CHECK: htmpl.traversal edges {{.*}} outs(%{{.*}} as etype)
// CHECK: arith.subf
// CHECK: return
hgraph.func @shared_cheap_scalar(%g: !hgraph.graph, %s: !hgraph.edge<1xf32> {hgraph.name = "s"},
                                 %t: !hgraph.edge<1xf32> {hgraph.name = "t"},
                                 %x: !hgraph.node<8xf32> {hgraph.name = "x"})
    -> (!hgraph.node<8xf32> {hgraph.name = "a"}, !hgraph.weight<edge, 8xf32> {hgraph.name = "w"}) {
  %c = hgraph.sub %s, %t : !hgraph.edge<1xf32>
  %xs = hgraph.gather %x from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %xd = hgraph.gather %x from dst : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %ys = hgraph.scale %c, %xs : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %yd = hgraph.scale %c, %xd : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %a = hgraph.aggregate sum %ys : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %w = hgraph.type_sum %yd : !hgraph.edge<8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return %a, %w : !hgraph.node<8xf32>, !hgraph.weight<edge, 8xf32>
}

// A chain of 100 row-wise ops (tanh, sigmoid, neg, relu in turn) is not
// fused into one body: the first 96 (kMaxFusedOps) are stored by a
// traversal of their own, which the aggregation reads.

// CUT-LABEL: func.func @f
// CUT: htmpl.gemm {{.*}} out(%[[V0:[^ ]*]] : memref<?x8xf32>)
// CUT: htmpl.traversal edges {{.*}} ins(%[[V0]] : memref<?x8xf32> as edge) outs(%[[V96:[^ ]*]] : memref<?x8xf32> as edge)
// CUT-COUNT-24: math.tanh
// CUT-NOT: math.tanh
// CUT: memref.store {{.*}}, %[[V96]]
// CUT: htmpl.traversal edges {{.*}} ins(%[[V96]] : memref<?x8xf32> as edge) outs(%{{.*}} as dst)
// CUT-COUNT-1: math.tanh
// CUT-NOT: math.tanh
// CUT: htmpl.accumulate add
