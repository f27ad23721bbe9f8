// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse -split-input-file | FileCheck %s
// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse --htmpl-to-gpu -split-input-file | FileCheck %s --check-prefix=GPU
// RUN: hector-opt %s --hgraph-to-htmpl=fuse-softmax-aggregate=true -split-input-file | FileCheck %s --check-prefix=FUSE

// On the GPU each group walk takes the warp mapping: a warp per destination
// (lane = thread id mod 32), its lanes splitting a group's edges.
// GPU-LABEL: func.func @within
// GPU: gpu.launch
// GPU: gpu.launch
// GPU: arith.remui %{{.*}}, %c32
// GPU-LABEL: func.func @sums
// GPU: gpu.launch
// GPU: arith.remui %{{.*}}, %c32

// The softmax within (destination, edge type) groups: the scores are stored
// by an edge traversal (the score expression fused into it), then one node
// traversal walks each destination's CSR row [row_ptr[t], row_ptr[t+1]).
// A slot starts a group when it is the row's first or its edge type
// (csr_etype) differs from the previous slot's; a binary search over the
// row (types ascend inside a row) finds the group's end. The group's edges
// have consecutive canonical ids, from csr_eid of its first slot: per
// column, a max loop over them from -inf, a sum loop of exp(score - max)
// from 0, and a loop that stores alpha = exp(score - max) / sum once per
// edge into the result (loops over edge ids, which the GPU lowering splits
// over a warp's lanes): no per-node or per-pair scratch, no atomics, no
// fill.

// CHECK-LABEL: func.func @within
// CHECK-SAME: %[[NTYPE:[^:]*]]: memref<?xi32> {hector.arg = {name = "node_type"
// CHECK-SAME: %[[ROWPTR:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_row_ptr"
// CHECK-SAME: %[[EID:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_eid"
// CHECK-SAME: %[[ETYPE:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_etype"
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x2xf32> {hector.arg = {name = "result0", role = "output"
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[SCORE:.*]] = memref.alloc({{.*}}) : memref<?x2xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) ins({{.*}}) outs(%[[SCORE]] : memref<?x2xf32> as edge)
// CHECK: arith.mulf
// CHECK: memref.store {{.*}}, %[[SCORE]]
// CHECK: htmpl.traversal nodes node_types(%[[NTYPE]] : memref<?xi32>) ins(%[[SCORE]] : memref<?x2xf32> as whole, %[[ROWPTR]] : memref<?xi32> as whole, %[[EID]] : memref<?xi32> as whole, %[[ETYPE]] : memref<?xi32> as whole) outs(%[[OUT]] : memref<?x2xf32> as whole) {
// CHECK-NEXT: ^bb0(%[[NODE:[^:]*]]: index,
// CHECK: %[[B:.*]] = memref.load %[[ROWPTR]][%[[NODE]]]
// CHECK: %[[BEGIN:.*]] = arith.index_cast %[[B]]
// CHECK: %[[E:.*]] = memref.load %[[ROWPTR]]
// CHECK: %[[END:.*]] = arith.index_cast %[[E]]
// CHECK: scf.for %[[SLOT:.*]] = %[[BEGIN]] to %[[END]]
// CHECK: %[[T:.*]] = memref.load %[[ETYPE]][%[[SLOT]]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[SLOT]], %[[BEGIN]]
// CHECK: %[[CHANGED:.*]] = arith.cmpi ne
// CHECK: %[[STARTS:.*]] = arith.ori %[[FIRST]], %[[CHANGED]]
// CHECK: scf.if %[[STARTS]] {
// CHECK: %[[GEND:.*]]:2 = scf.while
// CHECK: arith.cmpi slt
// CHECK: memref.load %[[ETYPE]]
// CHECK: %[[FE:.*]] = memref.load %[[EID]][%[[SLOT]]]
// CHECK: %[[FIRSTEDGE:.*]] = arith.index_cast %[[FE]]
// CHECK: %[[LEN:.*]] = arith.subi %[[GEND]]#0, %[[SLOT]]
// CHECK: %[[LASTEDGE:.*]] = arith.addi %[[FIRSTEDGE]], %[[LEN]]
// CHECK: scf.for %[[COL:.*]] = %c0 to %c2
// CHECK: %[[MAX:.*]] = scf.for %[[E1:.*]] = %[[FIRSTEDGE]] to %[[LASTEDGE]] {{.*}} iter_args(%{{.*}} = %[[NEGINF]])
// CHECK: memref.load %[[SCORE]][%[[E1]], %[[COL]]]
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = scf.for %[[E2:.*]] = %[[FIRSTEDGE]] to %[[LASTEDGE]] {{.*}} iter_args(%{{.*}} = %[[ZERO]])
// CHECK: memref.load %[[SCORE]][%[[E2]], %[[COL]]]
// CHECK: arith.subf %{{.*}}, %[[MAX]]
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: scf.for %[[E3:.*]] = %[[FIRSTEDGE]] to %[[LASTEDGE]]
// CHECK: math.exp
// CHECK: %[[ALPHA:.*]] = arith.divf %{{.*}}, %[[SUM]]
// CHECK: memref.store %[[ALPHA]], %[[OUT]][%[[E3]], %[[COL]]]
// CHECK-NOT: htmpl.accumulate
hgraph.func @within(%g: !hgraph.graph, %s: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "s"}) -> !hgraph.edge<2xf32, heads = 2> {
  %t = hgraph.const_scale %s by 2.000000e+00 : !hgraph.edge<2xf32, heads = 2>
  %a = hgraph.edge_softmax %t by_type : !hgraph.edge<2xf32, heads = 2>
  hgraph.return %a : !hgraph.edge<2xf32, heads = 2>
}

// -----

// A group sum of a value in memory (an argument) reads it in place: one
// node traversal, a sum loop per group and column, then the stores.
// CHECK-LABEL: func.func @sums
// CHECK-SAME: %[[X:[^:]*]]: memref<?x1xf32> {hector.arg = {name = "x"
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x1xf32> {hector.arg = {name = "result0"
// CHECK-NOT: memref.alloc
// CHECK: htmpl.traversal nodes node_types(%{{.*}} : memref<?xi32>) ins(%[[X]] : memref<?x1xf32> as whole,
// CHECK: scf.if
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args
// CHECK: arith.addf
// CHECK: scf.for
// CHECK: memref.store %[[SUM]], %[[OUT]]
// CHECK-NOT: math.exp
hgraph.func @sums(%g: !hgraph.graph, %x: !hgraph.edge<1xf32> {hgraph.name = "x"}) -> !hgraph.edge<1xf32> {
  %y = hgraph.group_sum %x : !hgraph.edge<1xf32>
  hgraph.return %y : !hgraph.edge<1xf32>
}

// -----

// A by_type softmax whose only use is a weighted sum into the destinations
// is not fused with it (htmpl.softmax_aggregate normalises per destination):
// the group walk stores α, and the aggregation reads it.
// CHECK-LABEL: func.func @attend
// CHECK: htmpl.traversal nodes
// CHECK: scf.while
// CHECK-NOT: htmpl.softmax_aggregate
// CHECK: htmpl.accumulate add
// FUSE-LABEL: func.func @attend
// FUSE-NOT: htmpl.softmax_aggregate
// FUSE: scf.while
// FUSE-NOT: htmpl.softmax_aggregate
hgraph.func @attend(%g: !hgraph.graph, %s: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "s"},
                    %z: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "z"}) -> !hgraph.node<8xf32, heads = 2> {
  %a = hgraph.edge_softmax %s by_type : !hgraph.edge<2xf32, heads = 2>
  %m = hgraph.scale %a, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %o = hgraph.aggregate sum %m : !hgraph.edge<8xf32, heads = 2> -> !hgraph.node<8xf32, heads = 2>
  hgraph.return %o : !hgraph.node<8xf32, heads = 2>
}
