// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse -split-input-file | FileCheck %s
// RUN: hector-opt %s --hgraph-to-htmpl=split-softmax=true --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=SPLIT

// The stitched edge softmax: one node traversal over destinations. Node t
// walks its CSR row [row_ptr[t], row_ptr[t+1]); every edge's rows come from
// the slot (csr_src, csr_eid, csr_etype; the destination is t itself), so
// edge-wise operands are passed whole (h twice: read at the source and at
// the destination). The
// running max starts at -inf and the sum at 0; the sum is rescaled by
// exp(old max - new max) and gains exp(score - new max). Max and sum are
// stored once per node, so there is no accumulate and no fill.

// CHECK-LABEL: func.func @gat
// CHECK-SAME: %[[ROWPTR:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_row_ptr"
// CHECK-SAME: %[[CSRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_src"
// CHECK-SAME: %[[EID:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_eid"
// CHECK-SAME: %[[ETYPE:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_etype"
// CHECK-SAME: %[[H:[^:]*]]: memref<?x16xf32> {hector.arg = {name = "arg1"
// CHECK-SAME: %[[A:[^:]*]]: memref<?x16xf32> {hector.arg = {name = "arg2"
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SCORE:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK: %[[MAX:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK: %[[SUM:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK-NOT: htmpl.traversal
// CHECK: htmpl.traversal nodes ins(%[[H]] : memref<?x16xf32> as whole, %[[A]] : memref<?x16xf32> as whole, %[[H]] : memref<?x16xf32> as whole, %[[ROWPTR]] : memref<?xi32> as whole, %[[CSRC]] : memref<?xi32> as whole, %[[EID]] : memref<?xi32> as whole, %[[ETYPE]] : memref<?xi32> as whole) outs(%[[SCORE]] : memref<?x1xf32> as whole, %[[MAX]] : memref<?x1xf32> as node, %[[SUM]] : memref<?x1xf32> as node) {
// CHECK-NEXT: ^bb0(%[[NODE:[^:]*]]: index, {{.*}}, %[[MAXROW:[^:]*]]: index, %[[SUMROW:[^:]*]]: index):
// CHECK: %[[B:.*]] = memref.load %[[ROWPTR]][%[[NODE]]]
// CHECK: %[[BEGIN:.*]] = arith.index_cast %[[B]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[NODE]], %c1
// CHECK: %[[E:.*]] = memref.load %[[ROWPTR]][%[[NEXT]]]
// CHECK: %[[END:.*]] = arith.index_cast %[[E]]
// CHECK: %[[WALK:.*]]:2 = scf.for %[[SLOT:.*]] = %[[BEGIN]] to %[[END]] step %c1 iter_args(%[[M:.*]] = %[[NEGINF]], %[[S:.*]] = %[[ZERO]]) -> (f32, f32) {
// CHECK-DAG: memref.load %[[EID]][%[[SLOT]]]
// CHECK-DAG: memref.load %[[CSRC]][%[[SLOT]]]
// CHECK-DAG: memref.load %[[ETYPE]][%[[SLOT]]]
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[H]][%[[NODE]],
// CHECK: scf.for {{.*}} iter_args
// CHECK: %[[X:.*]] = arith.select
// CHECK: memref.store %[[X]], %[[SCORE]]
// CHECK: %[[NEWMAX:.*]] = arith.maximumf %[[M]], %[[X]]
// CHECK: %[[D:.*]] = arith.subf %[[M]], %[[NEWMAX]]
// CHECK: %[[RESCALE:.*]] = math.exp %[[D]]
// CHECK: %[[XD:.*]] = arith.subf %[[X]], %[[NEWMAX]]
// CHECK: %[[TERM:.*]] = math.exp %[[XD]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[S]], %[[RESCALE]]
// CHECK: %[[NEWSUM:.*]] = arith.addf %[[SCALED]], %[[TERM]]
// CHECK: scf.yield %[[NEWMAX]], %[[NEWSUM]]
// CHECK: memref.store %[[WALK]]#0, %[[MAX]][%[[MAXROW]], %c0]
// CHECK: memref.store %[[WALK]]#1, %[[SUM]][%[[SUMROW]], %c0]
// CHECK-NOT: htmpl.accumulate
// CHECK: htmpl.traversal nodes outs
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[SCORE]] : memref<?x1xf32> as edge, %[[MAX]] : memref<?x1xf32> as dst, %[[SUM]] : memref<?x1xf32> as dst, %[[H]] : memref<?x16xf32> as src)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: htmpl.accumulate add

// The split lowering: the scores and a max accumulated per destination, then
// the sum of exponentials in a second edge traversal, after two fills.

// SPLIT-LABEL: func.func @gat
// SPLIT: %[[SCORE:.*]] = memref.alloc
// SPLIT: %[[MAX:.*]] = memref.alloc
// SPLIT: %[[SUM:.*]] = memref.alloc
// SPLIT: htmpl.traversal nodes outs(%[[MAX]] : memref<?x1xf32> as node)
// SPLIT: htmpl.traversal nodes outs(%[[SUM]] : memref<?x1xf32> as node)
// SPLIT: htmpl.traversal edges coo({{.*}}) outs(%[[SCORE]] : memref<?x1xf32> as edge, %[[MAX]] : memref<?x1xf32> as dst)
// SPLIT: htmpl.accumulate max
// SPLIT: htmpl.traversal edges coo({{.*}}) ins(%[[SCORE]] : memref<?x1xf32> as edge, %[[MAX]] : memref<?x1xf32> as dst) outs(%[[SUM]] : memref<?x1xf32> as dst)
// SPLIT: htmpl.accumulate add {{.*}}, %[[SUM]]
hgraph.func @gat(%g: !hgraph.graph, %h: !hgraph.node<16xf32>, %a: !hgraph.weight<edge, 16xf32>) -> !hgraph.node<16xf32> {
  %hs = hgraph.gather %h from src : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %ht = hgraph.gather %h from dst : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %s1 = hgraph.dot %hs, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %s2 = hgraph.dot %ht, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %s = hgraph.add %s1, %s2 : !hgraph.edge<1xf32>
  %score = hgraph.leaky_relu %s alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %hs : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  hgraph.return %out : !hgraph.node<16xf32>
}

// -----

// A softmax per feature column (an edge value of width 4, one head), whose
// input reads a compact-materialized value: a walk per column, and the rows
// of the compact operand come from compact_map[csr_eid[slot]]. The softmax
// result is returned: a plain edge traversal stores it.

// CHECK-LABEL: func.func @columns
// CHECK-SAME: %[[EID:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_eid"
// CHECK-SAME: %[[CMAP:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_map"
// CHECK: %[[Z:.*]] = memref.alloc
// CHECK: htmpl.gemm
// CHECK: %[[SCORE:.*]] = memref.alloc({{.*}}) : memref<?x4xf32>
// CHECK: htmpl.traversal nodes ins(%[[Z]] : memref<?x4xf32> as whole, {{.*}}, %[[CMAP]] : memref<?xi32> as whole) outs(%[[SCORE]] : memref<?x4xf32> as whole
// CHECK: scf.for %[[COL:.*]] = %c0 to %c4 step %c1 {
// CHECK: scf.for %[[SLOT:.*]] = {{.*}} iter_args
// CHECK: %[[E:.*]] = memref.load %[[EID]][%[[SLOT]]]
// CHECK: %[[EI:.*]] = arith.index_cast %[[E]]
// CHECK: %[[P:.*]] = memref.load %[[CMAP]][%[[EI]]]
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: memref.load %[[Z]][%[[PI]], %[[COL]]]
// CHECK: math.tanh
// CHECK: memref.store {{.*}}, %[[SCORE]][%[[EI]], %[[COL]]]
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[SCORE]] : memref<?x4xf32> as edge
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store
hgraph.func @columns(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<edge, 4x4xf32>) -> !hgraph.edge<4xf32> {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.tanh %z : !hgraph.edge<4xf32>
  %alpha = hgraph.edge_softmax %t : !hgraph.edge<4xf32>
  hgraph.return %alpha : !hgraph.edge<4xf32>
}
