// RUN: hector-opt %s --hgraph-to-htmpl=fuse-softmax-aggregate=false --canonicalize --cse -split-input-file | FileCheck %s
// RUN: hector-opt %s --hgraph-to-htmpl=split-softmax=true --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=SPLIT

// The edge softmax: the scores are stored by an edge traversal (the score
// expression fused into it), then one node traversal reduces them per
// destination. Node t walks its CSR row [row_ptr[t], row_ptr[t+1]) twice,
// reading score[csr_eid[slot]]: a max loop from -inf, then a sum loop of
// exp(score - max) from 0. Each is a plain reduction loop (one combining op)
// that the GPU lowering splits over a warp's lanes; max and sum are stored
// once per node, so there is no accumulate and no fill. An edge traversal
// stores alpha = exp(score - max) / sum once per edge; the consumer reads it.
// (Without fuse-softmax-aggregate=false a softmax that only feeds a
// weighted sum lowers with it to htmpl.softmax_aggregate:
// softmax-aggregate.mlir.)

// CHECK-LABEL: func.func @gat
// CHECK-SAME: %[[ROWPTR:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_row_ptr"
// CHECK-SAME: %[[EID:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_eid"
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SCORE:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) outs(%[[SCORE]] : memref<?x1xf32> as edge)
// CHECK: arith.select
// CHECK: memref.store {{.*}}, %[[SCORE]]
// CHECK: %[[MAX:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK: %[[SUM:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal nodes ins(%[[SCORE]] : memref<?x1xf32> as whole, %[[ROWPTR]] : memref<?xi32> as whole, %[[EID]] : memref<?xi32> as whole) outs(%[[MAX]] : memref<?x1xf32> as node, %[[SUM]] : memref<?x1xf32> as node) {
// CHECK-NEXT: ^bb0(%[[NODE:[^:]*]]: index, {{.*}}, %[[MAXROW:[^:]*]]: index, %[[SUMROW:[^:]*]]: index):
// CHECK: %[[B:.*]] = memref.load %[[ROWPTR]][%[[NODE]]]
// CHECK: %[[BEGIN:.*]] = arith.index_cast %[[B]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[NODE]], %c1
// CHECK: %[[E:.*]] = memref.load %[[ROWPTR]][%[[NEXT]]]
// CHECK: %[[END:.*]] = arith.index_cast %[[E]]
// CHECK: %[[M:.*]] = scf.for %[[SLOT:.*]] = %[[BEGIN]] to %[[END]] step %c1 iter_args(%[[ACC:.*]] = %[[NEGINF]]) -> (f32) {
// CHECK: %[[EDGE:.*]] = memref.load %[[EID]][%[[SLOT]]]
// CHECK: %[[EI:.*]] = arith.index_cast %[[EDGE]]
// CHECK: %[[X:.*]] = memref.load %[[SCORE]][%[[EI]], %c0]
// CHECK: %[[MX:.*]] = arith.maximumf %[[ACC]], %[[X]]
// CHECK: scf.yield %[[MX]]
// CHECK: %[[S:.*]] = scf.for %[[SLOT2:.*]] = %[[BEGIN]] to %[[END]] step %c1 iter_args(%[[ACC2:.*]] = %[[ZERO]]) -> (f32) {
// CHECK: %[[X2:.*]] = memref.load %[[SCORE]]
// CHECK: %[[D:.*]] = arith.subf %[[X2]], %[[M]]
// CHECK: %[[T:.*]] = math.exp %[[D]]
// CHECK: %[[SX:.*]] = arith.addf %[[ACC2]], %[[T]]
// CHECK: scf.yield %[[SX]]
// CHECK: memref.store %[[M]], %[[MAX]][%[[MAXROW]], %c0]
// CHECK: memref.store %[[S]], %[[SUM]][%[[SUMROW]], %c0]
// CHECK-NOT: htmpl.accumulate max
// CHECK: %[[ALPHA:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[SCORE]] : memref<?x1xf32> as edge, %[[MAX]] : memref<?x1xf32> as dst, %[[SUM]] : memref<?x1xf32> as dst) outs(%[[ALPHA]] : memref<?x1xf32> as edge)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: htmpl.traversal nodes outs
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[ALPHA]] : memref<?x1xf32> as edge, %{{.*}} : memref<?x16xf32> as src)
// CHECK-NOT: math.exp
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

// Scores that are in memory already (an edge argument, two heads) are
// reduced in place: no score traversal. The heads share one max walk and
// one sum walk, an iter_arg each, and one csr_eid load per slot.

// CHECK-LABEL: func.func @given
// CHECK-SAME: %[[EID:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_eid"
// CHECK-SAME: %[[E:[^:]*]]: memref<?x2xf32> {hector.arg = {name = "arg1"
// CHECK-NOT: htmpl.traversal edges
// CHECK: htmpl.traversal nodes ins(%[[E]] : memref<?x2xf32> as whole
// CHECK: %[[M:.*]]:2 = scf.for {{.*}} iter_args(%[[A0:.*]] = %{{.*}}, %[[A1:.*]] = %{{.*}}) -> (f32, f32) {
// CHECK: %[[ED:.*]] = memref.load %[[EID]]
// CHECK: %[[EI:.*]] = arith.index_cast %[[ED]]
// CHECK: %[[X0:.*]] = memref.load %[[E]][%[[EI]], %c0]
// CHECK: %[[M0:.*]] = arith.maximumf %[[A0]], %[[X0]]
// CHECK: %[[X1:.*]] = memref.load %[[E]][%[[EI]], %c1]
// CHECK: %[[M1:.*]] = arith.maximumf %[[A1]], %[[X1]]
// CHECK: scf.yield %[[M0]], %[[M1]]
// CHECK: %[[S:.*]]:2 = scf.for {{.*}} -> (f32, f32) {
// CHECK: arith.subf %{{.*}}, %[[M]]#0
// CHECK: arith.subf %{{.*}}, %[[M]]#1
// CHECK-NOT: scf.for
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[E]] : memref<?x2xf32> as edge
hgraph.func @given(%g: !hgraph.graph, %e: !hgraph.edge<2xf32, heads = 2>) -> !hgraph.edge<2xf32, heads = 2> {
  %alpha = hgraph.edge_softmax %e : !hgraph.edge<2xf32, heads = 2>
  hgraph.return %alpha : !hgraph.edge<2xf32, heads = 2>
}

// -----

// A softmax per feature column (an edge value of width 4, one head) of an
// expression of a compact-materialized value: the score traversal reads it
// through compact_map; the four columns share the walks. Past 8 columns
// (@wide) the walks run once per column, in a loop over the columns.

// CHECK-LABEL: func.func @columns
// CHECK: htmpl.gemm
// CHECK: %[[SCORE:.*]] = memref.alloc({{.*}}) : memref<?x4xf32>
// CHECK: htmpl.traversal edges coo({{.*}}) compact_map({{.*}}) ins(%{{.*}} : memref<?x4xf32> as compact) outs(%[[SCORE]] : memref<?x4xf32> as edge)
// CHECK: math.tanh
// CHECK: htmpl.traversal nodes ins(%[[SCORE]] : memref<?x4xf32> as whole
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32) {
// CHECK-COUNT-4: arith.maximumf
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32) {
// CHECK-COUNT-4: math.exp
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[SCORE]] : memref<?x4xf32> as edge
// CHECK: arith.divf
// CHECK: memref.store
hgraph.func @columns(%g: !hgraph.graph, %h: !hgraph.node<4xf32>, %W: !hgraph.weight<edge, 4x4xf32>) -> !hgraph.edge<4xf32> {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.tanh %z : !hgraph.edge<4xf32>
  %alpha = hgraph.edge_softmax %t : !hgraph.edge<4xf32>
  hgraph.return %alpha : !hgraph.edge<4xf32>
}

// -----

// CHECK-LABEL: func.func @wide
// CHECK: htmpl.traversal nodes
// CHECK: scf.for %[[COL:.*]] = %c0 to %c16 step %c1 {
// CHECK: scf.for {{.*}} -> (f32) {
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[COL]]]
// CHECK: arith.maximumf
// CHECK: scf.for {{.*}} -> (f32) {
// CHECK: math.exp
hgraph.func @wide(%g: !hgraph.graph, %e: !hgraph.edge<16xf32>) -> !hgraph.edge<16xf32> {
  %alpha = hgraph.edge_softmax %e : !hgraph.edge<16xf32>
  hgraph.return %alpha : !hgraph.edge<16xf32>
}

// -----

// A returned softmax (the α a training forward saves) is stored into its
// output first; the aggregation then reads it from there, with either
// lowering, instead of evaluating exp(score - max) / sum again.

// CHECK-LABEL: func.func @returned
// CHECK-SAME: %[[ALPHA:[^:]*]]: memref<?x1xf32> {hector.arg = {name = "alpha"
// CHECK: memref.store {{.*}}, %[[ALPHA]]
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[ALPHA]] : memref<?x1xf32> as edge, %{{.*}} : memref<?x8xf32> as src) outs(%{{.*}} : memref<?x8xf32> as dst)
// CHECK-NOT: math.exp
// CHECK: htmpl.accumulate add
// CHECK: return

// SPLIT-LABEL: func.func @returned
// SPLIT-SAME: %[[ALPHA:[^:]*]]: memref<?x1xf32> {hector.arg = {name = "alpha"
// SPLIT: htmpl.traversal edges coo({{.*}}) ins(%[[ALPHA]] : memref<?x1xf32> as edge, %{{.*}} : memref<?x8xf32> as src) outs(%{{.*}} : memref<?x8xf32> as dst)
// SPLIT-NOT: math.exp
// SPLIT: return
hgraph.func @returned(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %s: !hgraph.edge<1xf32>)
    -> (!hgraph.node<8xf32> {hgraph.name = "out"}, !hgraph.edge<1xf32> {hgraph.name = "alpha"}) {
  %alpha = hgraph.edge_softmax %s : !hgraph.edge<1xf32>
  %hs = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %msg = hgraph.scale %alpha, %hs : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %out, %alpha : !hgraph.node<8xf32>, !hgraph.edge<1xf32>
}

// -----

// Returned scores (the ones a training forward saves for the backward's
// leaky ReLU slope) are stored once, into their output, by the traversal
// that evaluates them; the per-destination reductions and α read them there.
// No second traversal copies them at the return.

// CHECK-LABEL: func.func @returned_scores
// CHECK-SAME: %[[SCORES:[^:]*]]: memref<?x1xf32> {hector.arg = {name = "scores"
// CHECK: htmpl.traversal edges coo({{.*}}) outs(%[[SCORES]] : memref<?x1xf32> as edge)
// CHECK: htmpl.traversal nodes ins(%[[SCORES]] : memref<?x1xf32> as whole
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[SCORES]] : memref<?x1xf32> as edge
// CHECK-NOT: outs(%[[SCORES]]
// CHECK: return

// SPLIT-LABEL: func.func @returned_scores
// SPLIT-SAME: %[[SCORES:[^:]*]]: memref<?x1xf32> {hector.arg = {name = "scores"
// SPLIT: htmpl.traversal edges coo({{.*}}) outs(%[[SCORES]] : memref<?x1xf32> as edge
// SPLIT-NOT: outs(%[[SCORES]]
// SPLIT: return
hgraph.func @returned_scores(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %a: !hgraph.weight<edge, 8xf32>)
    -> (!hgraph.node<8xf32> {hgraph.name = "out"}, !hgraph.edge<1xf32> {hgraph.name = "scores"}) {
  %hs = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32>
  %d = hgraph.dot %hs, %av : !hgraph.edge<8xf32> -> !hgraph.edge<1xf32>
  %score = hgraph.leaky_relu %d alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %hs : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %out, %score : !hgraph.node<8xf32>, !hgraph.edge<1xf32>
}
