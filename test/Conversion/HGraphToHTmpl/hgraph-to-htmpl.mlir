// RUN: hector-opt %s --hgraph-to-htmpl=fuse-softmax-aggregate=false --canonicalize --cse -split-input-file | FileCheck %s

// RGCN: the typed GEMM gathers source rows with one weight per edge-type
// segment; c_e and the message are evaluated inside the aggregating
// traversal (c_e hoisted out of the feature loop); the self loop is a plain
// GEMM; the residual sum writes the caller's output buffer.

// CHECK-LABEL: func.func @rgcn
// CHECK-SAME: %[[NT:.*]]: memref<?xi32> {hector.arg = {name = "node_type", role = "graph", shape = ["N"]}}
// CHECK-SAME: %[[SRC:.*]]: memref<?xi32> {hector.arg = {name = "edge_src", role = "graph", shape = ["E"]}}
// CHECK-SAME: %[[DST:.*]]: memref<?xi32> {hector.arg = {name = "edge_dst"
// CHECK-SAME: %[[ETY:.*]]: memref<?xi32> {hector.arg = {name = "edge_type"
// CHECK-SAME: %[[SEG:.*]]: memref<?xi32> {hector.arg = {name = "etype_offsets", role = "graph", shape = ["R+1"]}}
// CHECK-SAME: %[[NORM:.*]]: memref<?xf32> {hector.arg = {name = "edge_norm"
// CHECK-SAME: %[[H:.*]]: memref<?x16xf32> {hector.arg = {name = "h", role = "input", shape = ["N", 16]}}
// CHECK-SAME: %[[W:.*]]: memref<?x16x8xf32> {hector.arg = {name = "arg2", role = "weight", shape = ["R", 16, 8]}}
// CHECK-SAME: %[[W0:.*]]: memref<16x8xf32> {hector.arg = {name = "arg3", role = "weight", shape = [16, 8]}}
// CHECK-SAME: %[[OUT:.*]]: memref<?x8xf32> {hector.arg = {name = "result0", role = "output", shape = ["N", 8]}})
// CHECK-SAME: attributes {hector.entry, hector.kind = "inference", hector.primal = "rgcn", llvm.emit_c_interface}
// CHECK: %[[MSG:.*]] = memref.alloc
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x16xf32>[%[[SRC]] : memref<?xi32>]) rhs(%[[W]] : memref<?x16x8xf32>) out(%[[MSG]] : memref<?x8xf32>) segments(%[[SEG]] : memref<?xi32>)
// CHECK: %[[AGG:.*]] = memref.alloc
// CHECK: htmpl.traversal nodes outs(%[[AGG]] : memref<?x8xf32> as node)
// CHECK: htmpl.traversal edges coo(%[[SRC]], %[[DST]], %[[ETY]] : {{.*}}) ins(%[[NORM]] : memref<?xf32> as edge, %[[MSG]] : memref<?x8xf32> as edge) outs(%[[AGG]] : memref<?x8xf32> as dst)
// CHECK-NEXT: ^bb0(%{{.*}}: index, %[[RN:.*]]: index, %[[RM:.*]]: index, %[[RA:.*]]: index):
// CHECK-NEXT: %[[C:.*]] = memref.load %[[NORM]][%[[RN]]]
// CHECK-NEXT: scf.for %[[F:.*]] =
// CHECK-NEXT: %[[M:.*]] = memref.load %[[MSG]][%[[RM]], %[[F]]]
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[C]], %[[M]]
// CHECK-NEXT: htmpl.accumulate add %[[P]], %[[AGG]][%[[RA]], %[[F]]]
// CHECK: %[[SELF:.*]] = memref.alloc
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x16xf32>) rhs(%[[W0]] : memref<16x8xf32>) out(%[[SELF]] : memref<?x8xf32>)
// CHECK: htmpl.traversal nodes ins(%[[SELF]] : memref<?x8xf32> as node, %[[AGG]] : memref<?x8xf32> as node) outs(%[[OUT]] : memref<?x8xf32> as node)
// CHECK: arith.addf
// CHECK: memref.dealloc %[[MSG]]
// CHECK-NOT: hgraph.
hgraph.func @rgcn(%g: !hgraph.graph, %h: !hgraph.node<16xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 16x8xf32>, %W0: !hgraph.weight<single, 16x8xf32>) -> !hgraph.node<8xf32> {
  %msg = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x8xf32>, !hgraph.node<16xf32> -> !hgraph.edge<8xf32>
  %norm = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %scaled = hgraph.scale %norm, %msg : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %agg = hgraph.aggregate sum %scaled : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %self = hgraph.typed_linear %W0, %h from node : !hgraph.weight<single, 16x8xf32>, !hgraph.node<16xf32> -> !hgraph.node<8xf32>
  %out = hgraph.add %self, %agg : !hgraph.node<8xf32>
  hgraph.return %out : !hgraph.node<8xf32>
}

// -----

// RGAT with 2 heads: the scores are stored once per edge and head; one node
// traversal reduces them per destination (max, then sum of exp(score -
// max)); with several heads an edge traversal stores alpha = exp(score -
// max) / sum once per edge and head, and the final traversal loads it once
// per head to scale the feature loop (rather than every lane evaluating the
// alpha of all heads). (test/Conversion/HGraphToHTmpl/edge-softmax.mlir
// covers the reduction itself; by default, without
// fuse-softmax-aggregate=false, the softmax and the sum are one
// htmpl.softmax_aggregate: softmax-aggregate.mlir.)

// CHECK-LABEL: func.func @rgat
// CHECK: %[[Z:.*]] = memref.alloc
// CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x8xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}} : memref<?x8x8xf32>) out(%[[Z]] : memref<?x8xf32>)
// CHECK: %[[ZT:.*]] = memref.alloc
// CHECK: htmpl.gemm
// CHECK: %[[SCORE:.*]] = memref.alloc({{.*}}) : memref<?x2xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[Z]] : memref<?x8xf32> as edge, %{{.*}} : memref<?x8xf32> as etype, %[[ZT]] : memref<?x8xf32> as edge, %{{.*}} : memref<?x8xf32> as etype) outs(%[[SCORE]] : memref<?x2xf32> as edge)
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.select
// CHECK: memref.store {{.*}}, %[[SCORE]]
// CHECK: %[[MAX:.*]] = memref.alloc({{.*}}) : memref<?x2xf32>
// CHECK: %[[SUM:.*]] = memref.alloc({{.*}}) : memref<?x2xf32>
// CHECK: htmpl.traversal nodes ins(%[[SCORE]] : memref<?x2xf32> as whole, {{.*}}) outs(%[[MAX]] : memref<?x2xf32> as node, %[[SUM]] : memref<?x2xf32> as node)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK-NOT: htmpl.accumulate max
// CHECK: %[[ALPHAS:.*]] = memref.alloc({{.*}}) : memref<?x2xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[SCORE]] : memref<?x2xf32> as edge, %[[MAX]] : memref<?x2xf32> as dst, %[[SUM]] : memref<?x2xf32> as dst) outs(%[[ALPHAS]] : memref<?x2xf32> as edge)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store {{.*}}, %[[ALPHAS]]
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[ALPHAS]] : memref<?x2xf32> as edge, %[[Z]] : memref<?x8xf32> as edge) outs(%{{.*}} : memref<?x8xf32> as dst)
// CHECK: scf.for %[[HEAD:.*]] =
// CHECK: %[[ALPHA:.*]] = memref.load %[[ALPHAS]]
// CHECK-NEXT: scf.for
// CHECK-NOT: math.exp
// CHECK: arith.mulf %[[ALPHA]]
// CHECK: htmpl.accumulate add
hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<8xf32>,
                  %W: !hgraph.weight<edge, 8x8xf32>, %a: !hgraph.weight<edge, 8xf32>, %b: !hgraph.weight<edge, 8xf32>) -> !hgraph.node<8xf32, heads = 2> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32, heads = 2>
  %sa = hgraph.dot %z, %av : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<2xf32, heads = 2>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<2xf32, heads = 2>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<2xf32, heads = 2>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %out : !hgraph.node<8xf32, heads = 2>
}

// -----

// Node-typed weights run over the node-type-sorted permutation; per-head
// edge-typed weights keep their head dimension; a node-wise value read at
// the destination is a `dst` operand of the traversal.

// CHECK-LABEL: func.func @hgt_parts
// CHECK-SAME: %[[NT:[^:]*]]: memref<?xi32> {hector.arg = {name = "node_type"
// CHECK-SAME: %[[SRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_src"
// CHECK-SAME: %[[PERM:[^:]*]]: memref<?xi32> {hector.arg = {name = "ntype_perm", role = "graph", shape = ["N"]}}
// CHECK-SAME: %[[NSEG:[^:]*]]: memref<?xi32> {hector.arg = {name = "ntype_offsets", role = "graph", shape = ["T+1"]}}
// CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x8xf32>[%[[PERM]] : memref<?xi32>]) rhs(%{{.*}} : memref<?x8x8xf32>) out(%[[K:.*]] : memref<?x8xf32>[%[[PERM]] : memref<?xi32>]) segments(%[[NSEG]] : memref<?xi32>)
// CHECK: htmpl.gemm lhs(%[[K]] : memref<?x8xf32>[%[[SRC]] : memref<?xi32>]) rhs(%{{.*}} : memref<?x2x4x4xf32>)
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%{{.*}} : memref<?x8xf32> as edge, %[[K]] : memref<?x8xf32> as dst)
hgraph.func @hgt_parts(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %K: !hgraph.weight<node, 8x8xf32>,
                       %Watt: !hgraph.weight<edge, 2x4x4xf32>) -> !hgraph.edge<2xf32, heads = 2> {
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32, heads = 2>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 2x4x4xf32>, !hgraph.node<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %kt = hgraph.gather %k from dst : !hgraph.node<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %s = hgraph.dot %katt, %kt : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %s : !hgraph.edge<2xf32, heads = 2>
}

// -----

// Compact materialization: one GEMM row per unique (source, type) pair,
// read back through the compact map; mean divides by the CSR in-degree; max
// maps empty nodes from -inf to 0; concat fills its column ranges.

// CHECK-LABEL: func.func @layouts
// CHECK-SAME: {hector.arg = {name = "csr_row_ptr", role = "graph", shape = ["N+1"]}}
// CHECK-SAME: %[[CSRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_src", role = "graph", shape = ["P"]}}
// CHECK-SAME: %[[COFF:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_offsets", role = "graph", shape = ["R+1"]}}
// CHECK-SAME: %[[CMAP:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_map", role = "graph", shape = ["E"]}}
// CHECK: %[[ROWS:.*]] = memref.dim %[[CSRC]]
// CHECK: %[[Z:.*]] = memref.alloc(%[[ROWS]])
// CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x4xf32>[%[[CSRC]] : memref<?xi32>]) rhs(%{{.*}}) out(%[[Z]] : memref<?x4xf32>) segments(%[[COFF]] : memref<?xi32>)
// CHECK: htmpl.traversal edges coo({{.*}}) compact_map(%[[CMAP]] : memref<?xi32>) ins(%[[Z]] : memref<?x4xf32> as compact) outs(%[[MEAN:.*]] : memref<?x4xf32> as dst)
// CHECK: math.tanh
// CHECK: htmpl.traversal nodes ins(%{{.*}} : memref<?xi32> as whole, %[[MEAN]] : memref<?x4xf32> as node) outs(%[[MEAN]] : memref<?x4xf32> as node)
// CHECK: arith.maxsi
// CHECK: arith.sitofp
// CHECK: arith.divf
// CHECK: htmpl.accumulate max
// CHECK: arith.cmpf oeq
// CHECK: htmpl.traversal edges {{.*}} outs(%[[CAT:.*]] : memref<?x6xf32> as edge)
// CHECK: htmpl.traversal edges {{.*}} outs(%[[CAT]] : memref<?x6xf32> as edge)
// CHECK: arith.addi %{{.*}}, %c4
hgraph.func @layouts(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<edge, 4x4xf32>, %e: !hgraph.edge<2xf32>)
    -> (!hgraph.node<4xf32>, !hgraph.node<4xf32>, !hgraph.edge<6xf32>) {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.tanh %z : !hgraph.edge<4xf32>
  %mean = hgraph.aggregate mean %t : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %max = hgraph.aggregate max %z : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %cat = hgraph.concat %z, %e : !hgraph.edge<4xf32>, !hgraph.edge<2xf32> -> !hgraph.edge<6xf32>
  hgraph.return %mean, %max, %cat : !hgraph.node<4xf32>, !hgraph.node<4xf32>, !hgraph.edge<6xf32>
}

// -----

// Preference levels: a single weight read at an endpoint is applied once per
// node and read at the endpoint; an edge-typed one once per edge.

// CHECK-LABEL: func.func @preference
// CHECK-SAME: %[[SRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_src"
// CHECK-SAME: %[[H:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "arg1"
// CHECK: %[[PERNODE:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x4xf32>) rhs(%{{.*}} : memref<4x4xf32>) out(%[[PERNODE]] : memref<?x4xf32>)
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[PERNODE]] : memref<?x4xf32> as src)
hgraph.func @preference(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<single, 4x4xf32>) -> !hgraph.node<4xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %z : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %o : !hgraph.node<4xf32>
}

// -----

// Exact GELU and its gradient are row math inside a node traversal:
// 0.5·x·(1 + erf(x/√2)) and dy·(Φ(x) + x·exp(−x²/2)/√(2π)), through
// math.erf (erff on the CPU, __nv_erff on the GPU).
// CHECK-LABEL: func.func @gelu
// CHECK: htmpl.traversal nodes
// CHECK: math.erf
// CHECK: math.erf
// CHECK: math.exp
hgraph.func @gelu(%g: !hgraph.graph, %x: !hgraph.node<4xf32>, %dy: !hgraph.node<4xf32>)
    -> (!hgraph.node<4xf32>, !hgraph.node<4xf32>) {
  %y = hgraph.gelu %x : !hgraph.node<4xf32>
  %dx = hgraph.gelu_grad %dy, %x : !hgraph.node<4xf32>
  hgraph.return %y, %dx : !hgraph.node<4xf32>, !hgraph.node<4xf32>
}
