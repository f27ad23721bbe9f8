// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse -split-input-file | FileCheck %s

// typed_linear ... transpose is a GEMM with transpose_rhs in every form:
// node rows in node-type order, gathered source rows per edge-type segment,
// per-head weights on edge rows, and a single weight applied once per node
// and read at the destination.

// CHECK-LABEL: func.func @linear_transpose
// CHECK-SAME: %[[NTP:[^:]*]]: memref<?xi32> {hector.arg = {name = "ntype_perm"
// CHECK-SAME: %[[NTO:[^:]*]]: memref<?xi32> {hector.arg = {name = "ntype_offsets"
// CHECK-SAME: %[[X:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "x"
// CHECK-SAME: %[[E:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "e"
// CHECK: htmpl.gemm lhs(%[[X]] : memref<?x8xf32>[%[[NTP]] : memref<?xi32>]) rhs(%{{.*}} : memref<?x16x8xf32>) out(%{{.*}} : memref<?x16xf32>[%[[NTP]] : memref<?xi32>]) segments(%[[NTO]] : memref<?xi32>) {transpose_rhs}
// CHECK: htmpl.gemm lhs(%[[X]] : memref<?x8xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}} : memref<?x16x8xf32>) out(%{{.*}} : memref<?x16xf32>) segments(%{{.*}} : memref<?xi32>) {transpose_rhs}
// CHECK: htmpl.gemm lhs(%[[E]] : memref<?x8xf32>) rhs(%{{.*}} : memref<?x2x8x4xf32>) out(%{{.*}} : memref<?x16xf32>) segments(%{{.*}} : memref<?xi32>) {transpose_rhs}
// CHECK: %[[PERNODE:.*]] = memref.alloc
// CHECK: htmpl.gemm lhs(%[[X]] : memref<?x8xf32>) rhs(%{{.*}} : memref<16x8xf32>) out(%[[PERNODE]] : memref<?x16xf32>) {transpose_rhs}
// CHECK: htmpl.traversal edges {{.*}} ins(%[[PERNODE]] : memref<?x16xf32> as dst)
hgraph.func @linear_transpose(%g: !hgraph.graph, %x: !hgraph.node<8xf32> {hgraph.name = "x"},
    %e: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "e"},
    %Wn: !hgraph.weight<node, 16x8xf32>, %We: !hgraph.weight<edge, 16x8xf32>,
    %Wh: !hgraph.weight<edge, 2x8x4xf32>, %Ws: !hgraph.weight<single, 16x8xf32>)
    -> (!hgraph.node<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32, heads = 2>, !hgraph.edge<16xf32>) {
  %0 = hgraph.typed_linear %Wn, %x from node transpose : !hgraph.weight<node, 16x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<16xf32>
  %1 = hgraph.typed_linear %We, %x from src transpose : !hgraph.weight<edge, 16x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<16xf32>
  %2 = hgraph.typed_linear %Wh, %e from edge transpose : !hgraph.weight<edge, 2x8x4xf32>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<16xf32, heads = 2>
  %3 = hgraph.typed_linear %Ws, %x from dst transpose : !hgraph.weight<single, 16x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<16xf32>
  hgraph.return %0, %1, %2, %3 : !hgraph.node<16xf32>, !hgraph.edge<16xf32>, !hgraph.edge<16xf32, heads = 2>, !hgraph.edge<16xf32>
}

// -----

// aggregate ... to src accumulates into the source row. When its input is
// a transposed typed_linear used nowhere else, one GEMM scatters the rows
// into the (zero-filled) sources with atomic adds; a gathered input is read
// through edge_dst in place.

// CHECK-LABEL: func.func @aggregate_src
// CHECK-SAME: %[[SRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_src"
// CHECK-SAME: %[[DST:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_dst"
// CHECK-SAME: %[[X:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "x"
// CHECK-SAME: %[[DZ:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "dz"
// CHECK-SAME: %[[OUT0:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "result0"
// CHECK-SAME: %[[OUT1:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "result1"
// CHECK: htmpl.traversal nodes outs(%[[OUT0]] : memref<?x8xf32> as node)
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[X]] : memref<?x8xf32> as edge) outs(%[[OUT0]] : memref<?x8xf32> as src)
// CHECK-NEXT: ^bb0(%{{.*}}: index, %[[RX:.*]]: index, %[[RO:.*]]: index):
// CHECK: %[[V:.*]] = memref.load %[[X]][%[[RX]]
// CHECK-NEXT: htmpl.accumulate add %[[V]], %[[OUT0]][%[[RO]]
// CHECK: htmpl.traversal nodes outs(%[[OUT1]] : memref<?x8xf32> as node)
// CHECK-NOT: memref.alloc
// CHECK: htmpl.gemm lhs(%[[DZ]] : memref<?x4xf32>[%[[DST]] : memref<?xi32>]) rhs(%{{.*}} : memref<?x8x4xf32>) out(%[[OUT1]] : memref<?x8xf32>[%[[SRC]] : memref<?xi32>]) segments(%{{.*}}) {accumulate, atomic, transpose_rhs}
hgraph.func @aggregate_src(%g: !hgraph.graph, %x: !hgraph.edge<8xf32> {hgraph.name = "x"},
    %dz: !hgraph.node<4xf32> {hgraph.name = "dz"}, %W: !hgraph.weight<edge, 8x4xf32>)
    -> (!hgraph.node<8xf32>, !hgraph.node<8xf32>) {
  %0 = hgraph.aggregate sum %x to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %d = hgraph.gather %dz from dst : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.typed_linear %W, %d from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<8xf32>
  %1 = hgraph.aggregate sum %t to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %0, %1 : !hgraph.node<8xf32>, !hgraph.node<8xf32>
}

// -----

// weight_grad is an outer-product GEMM (transpose_lhs) written straight into
// the weight-shaped output: gathered sources per edge-type segment; a
// compact gradient read per edge through compact_map; node rows in
// node-type order on both sides (per-head blocks); a single weight over all
// edges with no segments.

// CHECK-LABEL: func.func @weight_grads
// CHECK-SAME: %[[SRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_src"
// CHECK-SAME: %[[DST:[^:]*]]: memref<?xi32> {hector.arg = {name = "edge_dst"
// CHECK-SAME: %[[SEG:[^:]*]]: memref<?xi32> {hector.arg = {name = "etype_offsets"
// CHECK-SAME: %[[NTP:[^:]*]]: memref<?xi32> {hector.arg = {name = "ntype_perm"
// CHECK-SAME: %[[NTO:[^:]*]]: memref<?xi32> {hector.arg = {name = "ntype_offsets"
// CHECK-SAME: %[[MAP:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_map"
// CHECK-SAME: %[[H:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "h"
// CHECK-SAME: %[[DZ:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "dz"
// CHECK-SAME: %[[DN:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "dn"
// CHECK-SAME: %[[HN:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "hn"
// CHECK-SAME: %[[DW0:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "result0", role = "output", shape = ["R", 8, 4]}}
// CHECK-SAME: %[[DW1:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "result1"
// CHECK-SAME: %[[DW2:[^:]*]]: memref<?x2x4x2xf32> {hector.arg = {name = "result2", role = "output", shape = ["T", 2, 4, 2]}}
// CHECK-SAME: %[[DW3:[^:]*]]: memref<8x4xf32> {hector.arg = {name = "result3", role = "output", shape = [8, 4]}}
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x8xf32>[%[[SRC]] : memref<?xi32>]) rhs(%[[DZ]] : memref<?x4xf32>) out(%[[DW0]] : memref<?x8x4xf32>) segments(%[[SEG]] : memref<?xi32>) {transpose_lhs}
// CHECK: %[[PAIRS:.*]] = memref.alloc
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x8xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}}) out(%[[PAIRS]] : memref<?x4xf32>) segments(%{{.*}})
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x8xf32>[%[[DST]] : memref<?xi32>]) rhs(%[[PAIRS]] : memref<?x4xf32>[%[[MAP]] : memref<?xi32>]) out(%[[DW1]] : memref<?x8x4xf32>) segments(%[[SEG]] : memref<?xi32>) {transpose_lhs}
// A temporary is freed right after its last reader, not at the return.
// CHECK-NEXT: memref.dealloc %[[PAIRS]]
// CHECK: htmpl.gemm lhs(%[[HN]] : memref<?x8xf32>[%[[NTP]] : memref<?xi32>]) rhs(%[[DN]] : memref<?x4xf32>[%[[NTP]] : memref<?xi32>]) out(%[[DW2]] : memref<?x2x4x2xf32>) segments(%[[NTO]] : memref<?xi32>) {transpose_lhs}
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x8xf32>[%[[SRC]] : memref<?xi32>]) rhs(%[[DZ]] : memref<?x4xf32>) out(%[[DW3]] : memref<8x4xf32>) {transpose_lhs}
// CHECK-NOT: memref.dealloc
// CHECK: return
hgraph.func @weight_grads(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
    %dz: !hgraph.edge<4xf32> {hgraph.name = "dz"}, %dn: !hgraph.node<4xf32, heads = 2> {hgraph.name = "dn"},
    %hn: !hgraph.node<8xf32, heads = 2> {hgraph.name = "hn"}, %V: !hgraph.weight<edge, 8x4xf32>)
    -> (!hgraph.weight<edge, 8x4xf32>, !hgraph.weight<edge, 8x4xf32>, !hgraph.weight<node, 2x4x2xf32>, !hgraph.weight<single, 8x4xf32>) {
  %0 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %c = hgraph.typed_linear %V, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 8x4xf32>, !hgraph.node<8xf32> -> !hgraph.edge<4xf32>
  %1 = hgraph.weight_grad %h from dst, %c : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %2 = hgraph.weight_grad %hn from node, %dn : !hgraph.node<8xf32, heads = 2>, !hgraph.node<4xf32, heads = 2> -> !hgraph.weight<node, 2x4x2xf32>
  %x = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %3 = hgraph.weight_grad %x from edge, %dz : !hgraph.edge<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<single, 8x4xf32>
  hgraph.return %0, %1, %2, %3 : !hgraph.weight<edge, 8x4xf32>, !hgraph.weight<edge, 8x4xf32>, !hgraph.weight<node, 2x4x2xf32>, !hgraph.weight<single, 8x4xf32>
}

// -----

// type_sum zero-fills the weight, then accumulates every row into the slice
// of its type: `as etype` on edges, `as ntype` on nodes, the whole vector for
// a single weight (indexed by column only).

// CHECK-LABEL: func.func @type_sums
// CHECK-SAME: %[[NT:[^:]*]]: memref<?xi32> {hector.arg = {name = "node_type"
// CHECK-SAME: %[[X:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "arg1"
// CHECK-SAME: %[[N:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "arg2"
// CHECK-SAME: %[[WE:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "result0", role = "output", shape = ["R", 8]}}
// CHECK-SAME: %[[WN:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "result1", role = "output", shape = ["T", 4]}}
// CHECK-SAME: %[[WS:[^:]*]]: memref<4xf32> {hector.arg = {name = "result2", role = "output", shape = [4]}}
// CHECK: htmpl.traversal nodes outs(%[[WE]] : memref<?x8xf32> as node)
// CHECK: memref.store %{{.*}}, %[[WE]]
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[X]] : memref<?x8xf32> as edge) outs(%[[WE]] : memref<?x8xf32> as etype)
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[RT:.*]]: index):
// CHECK: htmpl.accumulate add %{{.*}}, %[[WE]][%[[RT]], %{{.*}}]
// CHECK: htmpl.traversal nodes outs(%[[WN]] : memref<?x4xf32> as node)
// CHECK: htmpl.traversal nodes node_types(%[[NT]] : memref<?xi32>) ins(%[[N]] : memref<?x4xf32> as node) outs(%[[WN]] : memref<?x4xf32> as ntype)
// CHECK: htmpl.accumulate add
// CHECK: htmpl.traversal nodes outs(%[[WS]] : memref<4xf32> as node)
// CHECK: htmpl.traversal nodes ins(%[[N]] : memref<?x4xf32> as node) outs(%[[WS]] : memref<4xf32> as whole)
// CHECK: scf.for %[[F:.*]] =
// CHECK: htmpl.accumulate add %{{.*}}, %[[WS]][%[[F]]] : f32, memref<4xf32>
hgraph.func @type_sums(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>, %n: !hgraph.node<4xf32>)
    -> (!hgraph.weight<edge, 8xf32>, !hgraph.weight<node, 4xf32>, !hgraph.weight<single, 4xf32>) {
  %0 = hgraph.type_sum %x : !hgraph.edge<8xf32, heads = 2> -> !hgraph.weight<edge, 8xf32>
  %1 = hgraph.type_sum %n : !hgraph.node<4xf32> -> !hgraph.weight<node, 4xf32>
  %2 = hgraph.type_sum %n : !hgraph.node<4xf32> -> !hgraph.weight<single, 4xf32>
  hgraph.return %0, %1, %2 : !hgraph.weight<edge, 8xf32>, !hgraph.weight<node, 4xf32>, !hgraph.weight<single, 4xf32>
}

// -----

// degree_norm, leaky_relu_grad, slice, zeros and equal are row-wise: all of
// them are evaluated inside the one aggregating traversal. The in-degree
// comes from csr_row_ptr at the destination row.

// CHECK-LABEL: func.func @row_ops
// CHECK-SAME: %[[PTR:[^:]*]]: memref<?xi32> {hector.arg = {name = "csr_row_ptr", role = "graph", shape = ["N+1"]}}
// CHECK: htmpl.traversal edges coo({{.*}}) ins(%[[PTR]] : memref<?xi32> as dst, %[[DY:.*]] : memref<?x8xf32> as edge, %[[X:.*]] : memref<?x8xf32> as edge) outs(%{{.*}} : memref<?x2xf32> as dst)
// CHECK-NEXT: ^bb0(%{{.*}}: index, %[[RP:[^:]*]]: index, %[[RDY:[^:]*]]: index, %[[RX:[^:]*]]: index, %{{.*}}: index):
// CHECK: %[[NEXT:.*]] = arith.addi %[[RP]], %c1
// CHECK: %[[B:.*]] = memref.load %[[PTR]][%[[RP]]]
// CHECK: %[[E:.*]] = memref.load %[[PTR]][%[[NEXT]]]
// CHECK: %[[DEG:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: %[[DEGF:.*]] = arith.sitofp %[[DEG]]
// CHECK: %[[NORM:.*]] = arith.divf %{{.*}}, %[[DEGF]]
// CHECK: %[[COL:.*]] = arith.addi %{{.*}}, %c1
// CHECK: %[[G:.*]] = memref.load %[[DY]][%[[RDY]], %[[COL]]]
// CHECK: %[[XV:.*]] = memref.load %[[X]][%[[RX]], %[[COL]]]
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[XV]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[G]], %cst
// CHECK: %[[LG:.*]] = arith.select %[[POS]], %[[G]], %[[SCALED]]
// CHECK: %[[EQ:.*]] = arith.cmpf oeq, %[[LG]]
// CHECK: %[[IND:.*]] = arith.select %[[EQ]]
// CHECK: %[[M:.*]] = arith.mulf %[[NORM]], %[[IND]]
// CHECK: htmpl.accumulate add %[[M]]
hgraph.func @row_ops(%g: !hgraph.graph, %dy: !hgraph.edge<8xf32, heads = 2>, %x: !hgraph.edge<8xf32, heads = 2>)
    -> !hgraph.node<2xf32, heads = 2> {
  %d = hgraph.degree_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %l = hgraph.leaky_relu_grad %dy, %x alpha 2.000000e-01 : !hgraph.edge<8xf32, heads = 2>
  %s = hgraph.slice %l offset 1 : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %z = hgraph.zeros : !hgraph.edge<2xf32, heads = 2>
  %q = hgraph.equal %s, %z : !hgraph.edge<2xf32, heads = 2>
  %m = hgraph.scale %d, %q : !hgraph.edge<1xf32>, !hgraph.edge<2xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  %a = hgraph.aggregate sum %m : !hgraph.edge<2xf32, heads = 2> -> !hgraph.node<2xf32, heads = 2>
  hgraph.return %a : !hgraph.node<2xf32, heads = 2>
}

// -----

// A sum of weights (autodiff's sum of the contributions of a weight used
// twice): the two gradient GEMMs write, then accumulate into, the output;
// zeros add nothing; a weight argument is added by a traversal; a sum of
// zeros is a fill.

// CHECK-LABEL: func.func @weight_sum
// CHECK-SAME: %[[W:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "arg4"
// CHECK-SAME: %[[U:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "result0"
// CHECK-SAME: %[[ZZ:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "result1"
// CHECK-NOT: memref.alloc
// CHECK: htmpl.gemm lhs({{.*}}) rhs({{.*}}) out(%[[U]] : memref<?x8x4xf32>) segments({{.*}}) {transpose_lhs}
// CHECK: htmpl.gemm lhs({{.*}}) rhs({{.*}}) out(%[[U]] : memref<?x8x4xf32>) segments({{.*}}) {accumulate, transpose_lhs}
// CHECK: htmpl.traversal nodes ins(%[[W]] : memref<?x8x4xf32> as node) outs(%[[U]] : memref<?x8x4xf32> as node)
// CHECK: %[[A:.*]] = memref.load %[[W]]
// CHECK: %[[B:.*]] = memref.load %[[U]]
// CHECK: %[[SUM:.*]] = arith.addf %[[B]], %[[A]]
// CHECK: memref.store %[[SUM]], %[[U]]
// CHECK: htmpl.traversal nodes outs(%[[ZZ]] : memref<?x8x4xf32> as node)
// CHECK-NOT: htmpl.
hgraph.func @weight_sum(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %dz: !hgraph.edge<4xf32>, %dq: !hgraph.edge<4xf32>,
    %W: !hgraph.weight<edge, 8x4xf32>) -> (!hgraph.weight<edge, 8x4xf32>, !hgraph.weight<edge, 8x4xf32>) {
  %g1 = hgraph.weight_grad %h from src, %dz : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %g2 = hgraph.weight_grad %h from dst, %dq : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  %s = hgraph.add %g1, %g2 : !hgraph.weight<edge, 8x4xf32>
  %z = hgraph.zeros : !hgraph.weight<edge, 8x4xf32>
  %t = hgraph.add %s, %z : !hgraph.weight<edge, 8x4xf32>
  %u = hgraph.add %t, %W : !hgraph.weight<edge, 8x4xf32>
  %zz = hgraph.add %z, %z : !hgraph.weight<edge, 8x4xf32>
  hgraph.return %u, %zz : !hgraph.weight<edge, 8x4xf32>, !hgraph.weight<edge, 8x4xf32>
}

// -----

// The training ABI: roles and names from `hgraph.role` / `hgraph.name` on
// arguments and results, kind and primal on the entry, compact rows ("P")
// for a saved value and a compact argument read through compact_map, a
// weight of zeros filled in place, a weight argument returned as a copy.

// CHECK-LABEL: func.func @abi
// CHECK-SAME: %[[MAP:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_map", role = "graph", shape = ["E"]}}
// CHECK-SAME: %[[H:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "h", role = "input", shape = ["N", 4]}}
// CHECK-SAME: %[[S:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "saved0", role = "saved", shape = ["P", 4]}}
// CHECK-SAME: %{{[^:]*}}: memref<?x4xf32> {hector.arg = {name = "d_result0", role = "grad_output", shape = ["N", 4]}}
// CHECK-SAME: %[[W:[^:]*]]: memref<?x4x4xf32> {hector.arg = {name = "W", role = "weight", shape = ["R", 4, 4]}}
// CHECK-SAME: %[[DH:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "d_h", role = "grad", shape = ["N", 4]}}
// CHECK-SAME: %[[DW:[^:]*]]: memref<?x4x4xf32> {hector.arg = {name = "d_W", role = "grad", shape = ["R", 4, 4]}}
// CHECK-SAME: %[[COPY:[^:]*]]: memref<?x4x4xf32> {hector.arg = {name = "W_copy", role = "output", shape = ["R", 4, 4]}}
// CHECK-SAME: %[[Z:[^:]*]]: memref<?x4xf32> {hector.arg = {name = "z", role = "saved", shape = ["P", 4]}}
// CHECK-SAME: attributes {hector.entry, hector.kind = "training_backward", hector.primal = "f", llvm.emit_c_interface}
// CHECK: htmpl.traversal edges coo({{.*}}) compact_map(%[[MAP]] : memref<?xi32>) ins(%[[S]] : memref<?x4xf32> as compact) outs(%[[DH]] : memref<?x4xf32> as dst)
// CHECK: htmpl.traversal nodes outs(%[[DW]] : memref<?x4x4xf32> as node)
// CHECK: memref.store %{{.*}}, %[[DW]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x4xf32>
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x4xf32>[%{{.*}} : memref<?xi32>]) rhs(%[[W]] : memref<?x4x4xf32>) out(%[[Z]] : memref<?x4xf32>)
// CHECK: htmpl.traversal nodes ins(%[[W]] : memref<?x4x4xf32> as node) outs(%[[COPY]] : memref<?x4x4xf32> as node)
// CHECK-NOT: memref.alloc
hgraph.func @abi(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
    %s: !hgraph.edge<4xf32> {hgraph.name = "saved0", hgraph.role = "saved", hgraph.materialization = #hgraph.materialization<compact>},
    %dy: !hgraph.node<4xf32> {hgraph.name = "d_result0", hgraph.role = "grad_output"},
    %W: !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W"})
    -> (!hgraph.node<4xf32> {hgraph.name = "d_h", hgraph.role = "grad"},
        !hgraph.weight<edge, 4x4xf32> {hgraph.name = "d_W", hgraph.role = "grad"},
        !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W_copy"},
        !hgraph.edge<4xf32> {hgraph.name = "z", hgraph.role = "saved", hgraph.materialization = #hgraph.materialization<compact>})
    attributes {hgraph.kind = "training_backward", hgraph.primal = "f"} {
  %dh = hgraph.aggregate sum %s : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %dW = hgraph.zeros : !hgraph.weight<edge, 4x4xf32>
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  hgraph.return %dh, %dW, %W, %z : !hgraph.node<4xf32>, !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4x4xf32>, !hgraph.edge<4xf32>
}

// -----

// Without attributes an entry is an inference entry named after itself.

// CHECK-LABEL: func.func @plain
// CHECK-SAME: attributes {hector.entry, hector.kind = "inference", hector.primal = "plain", llvm.emit_c_interface}
hgraph.func @plain(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> {
  hgraph.return %h : !hgraph.node<4xf32>
}

// -----

// A compact weight gradient (from src, edge-typed weight): the gradient
// expression is evaluated per edge and accumulated into its (source, edge
// type) pair's row, walking the edges in pair order (pair_eid) so that
// consecutive edges share the row; then the outer-product GEMM runs over the
// pairs: the source rows through compact_src, one segment per type
// (compact_offsets).

// CHECK-LABEL: func.func @compact_weight_grad
// CHECK-SAME: %[[CSRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_src", role = "graph", shape = ["P"]}}
// CHECK-SAME: %[[COFF:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_offsets"
// CHECK-SAME: %[[CMAP:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_map"
// CHECK-SAME: %[[PEID:[^:]*]]: memref<?xi32> {hector.arg = {name = "pair_eid", role = "graph", shape = ["E"]}}
// CHECK-SAME: %[[H:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "h"
// CHECK-SAME: %[[DW:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "d_W"
// CHECK: %[[P:.*]] = memref.dim %[[CSRC]]
// CHECK: %[[PAIRS:.*]] = memref.alloc(%[[P]]) : memref<?x4xf32>
// CHECK: htmpl.traversal nodes outs(%[[PAIRS]] : memref<?x4xf32> as node)
// CHECK: htmpl.traversal edges pairs(%{{.*}}, %{{.*}}, %{{.*}}, %[[PEID]] : {{.*}}) compact_map(%[[CMAP]] : memref<?xi32>) ins({{.*}}) outs(%[[PAIRS]] : memref<?x4xf32> as compact)
// CHECK: arith.select
// CHECK: htmpl.accumulate add {{.*}}, %[[PAIRS]]
// CHECK: htmpl.gemm lhs(%[[H]] : memref<?x8xf32>[%[[CSRC]] : memref<?xi32>]) rhs(%[[PAIRS]] : memref<?x4xf32>) out(%[[DW]] : memref<?x8x4xf32>) segments(%[[COFF]] : memref<?xi32>) {transpose_lhs}
hgraph.func @compact_weight_grad(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                                 %dz: !hgraph.edge<4xf32> {hgraph.name = "dz"})
    -> (!hgraph.weight<edge, 8x4xf32> {hgraph.name = "d_W", hgraph.role = "grad"}) {
  %r = hgraph.leaky_relu %dz alpha 1.000000e-01 : !hgraph.edge<4xf32>
  %0 = hgraph.weight_grad %h from src, %r {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  hgraph.return %0 : !hgraph.weight<edge, 8x4xf32>
}

// -----

// In a compacted function the input gradient of a map read from src runs
// over the pairs too: the per-pair sums of the gradient (computed once,
// shared with the compact weight gradient) go through one GEMM whose rows
// scatter into the sources (compact_src) with atomic adds; the per-edge
// gradient never reaches memory, and the pair sums are freed after their
// last reader.

// CHECK-LABEL: func.func @input_grad_over_pairs
// CHECK-SAME: %[[CSRC:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_src", role = "graph", shape = ["P"]}}
// CHECK-SAME: %[[COFF:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_offsets"
// CHECK-SAME: %[[W:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "W"
// CHECK-SAME: %[[DH:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "d_h"
// CHECK-SAME: %[[DW:[^:]*]]: memref<?x8x4xf32> {hector.arg = {name = "d_W"
// CHECK: %[[PAIRS:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK-COUNT-1: outs(%[[PAIRS]] : memref<?x4xf32> as compact)
// CHECK: htmpl.gemm lhs(%[[PAIRS]] : memref<?x4xf32>) rhs(%[[W]] : memref<?x8x4xf32>) out(%[[DH]] : memref<?x8xf32>[%[[CSRC]] : memref<?xi32>]) segments(%[[COFF]] : memref<?xi32>) {accumulate, atomic, transpose_rhs}
// CHECK-NOT: as compact)
// CHECK: htmpl.gemm lhs(%{{.*}}) rhs(%[[PAIRS]] : memref<?x4xf32>) out(%[[DW]] : memref<?x8x4xf32>) segments(%[[COFF]] : memref<?xi32>) {transpose_lhs}
// CHECK: memref.dealloc %[[PAIRS]]
hgraph.func @input_grad_over_pairs(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                                   %W: !hgraph.weight<edge, 8x4xf32> {hgraph.name = "W"},
                                   %dz: !hgraph.edge<4xf32> {hgraph.name = "dz"})
    -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"},
        !hgraph.weight<edge, 8x4xf32> {hgraph.name = "d_W", hgraph.role = "grad"}) {
  %r = hgraph.leaky_relu %dz alpha 1.000000e-01 : !hgraph.edge<4xf32>
  %x = hgraph.typed_linear %W, %r from edge transpose : !hgraph.weight<edge, 8x4xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<8xf32>
  %dh = hgraph.aggregate sum %x to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %dW = hgraph.weight_grad %h from src, %r {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.node<8xf32>, !hgraph.edge<4xf32> -> !hgraph.weight<edge, 8x4xf32>
  hgraph.return %dh, %dW : !hgraph.node<8xf32>, !hgraph.weight<edge, 8x4xf32>
}

// -----

// A narrow per-edge value that reduces wider rows (a dot product) and has
// several readers is stored once, [E, 1], and read back by each reader's
// traversal instead of being evaluated again from the 16-wide rows.

// CHECK-LABEL: func.func @shared_score
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal edges {{.*}} outs(%[[S]] : memref<?x1xf32> as edge)
// CHECK: htmpl.traversal edges {{.*}}ins(%[[S]] : memref<?x1xf32> as edge{{.*}}outs(%{{.*}} as dst)
// CHECK: htmpl.traversal edges {{.*}}ins(%[[S]] : memref<?x1xf32> as edge{{.*}}outs(%{{.*}} as src)
hgraph.func @shared_score(%g: !hgraph.graph, %x: !hgraph.edge<16xf32> {hgraph.name = "x"},
                          %y: !hgraph.edge<16xf32> {hgraph.name = "y"})
    -> (!hgraph.node<1xf32> {hgraph.name = "a"}, !hgraph.node<1xf32> {hgraph.name = "b"}) {
  %d = hgraph.dot %x, %y : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %e = hgraph.exp %d : !hgraph.edge<1xf32>
  %n = hgraph.neg %d : !hgraph.edge<1xf32>
  %a = hgraph.aggregate sum %e : !hgraph.edge<1xf32> -> !hgraph.node<1xf32>
  %b = hgraph.aggregate sum %n to src : !hgraph.edge<1xf32> -> !hgraph.node<1xf32>
  hgraph.return %a, %b : !hgraph.node<1xf32>, !hgraph.node<1xf32>
}

// -----

// The per-type sum of a scalar times a value stored one row per (source,
// edge type) pair (RGAT's d_a) runs over the pairs: the scalar summed per
// pair (in pair order), then one outer-product GEMM over the P pair rows,
// segmented by compact_offsets, into the [R, 8] weight seen as [R, 1, 8];
// with a scalar per head, per-head slices [R, 2, 1, 4]. Each pair's row is
// read once, not once per edge.

// CHECK-LABEL: func.func @type_sum_over_pairs
// CHECK-SAME: %[[COFF:[^:]*]]: memref<?xi32> {hector.arg = {name = "compact_offsets"
// CHECK-SAME: %[[Z:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "z"
// CHECK-SAME: %[[DA:[^:]*]]: memref<?x8xf32> {hector.arg = {name = "d_a"
// CHECK: %[[SUMS:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: htmpl.traversal edges pairs({{.*}}) outs(%[[SUMS]] : memref<?x1xf32> as compact)
// CHECK: %[[SLICES:.*]] = memref.expand_shape %[[DA]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 1, 8] : memref<?x8xf32> into memref<?x1x8xf32>
// CHECK: htmpl.gemm lhs(%[[SUMS]] : memref<?x1xf32>) rhs(%[[Z]] : memref<?x8xf32>) out(%[[SLICES]] : memref<?x1x8xf32>) segments(%[[COFF]] : memref<?xi32>) {transpose_lhs}
// CHECK-NOT: htmpl.traversal
// CHECK: return
hgraph.func @type_sum_over_pairs(%g: !hgraph.graph,
    %z: !hgraph.edge<8xf32> {hgraph.name = "z", hgraph.materialization = #hgraph.materialization<compact>},
    %s: !hgraph.edge<1xf32> {hgraph.name = "s"})
    -> (!hgraph.weight<edge, 8xf32> {hgraph.name = "d_a", hgraph.role = "grad"}) {
  %t = hgraph.leaky_relu %s alpha 1.000000e-01 : !hgraph.edge<1xf32>
  %m = hgraph.scale %t, %z : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %d = hgraph.type_sum %m : !hgraph.edge<8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return %d : !hgraph.weight<edge, 8xf32>
}

// -----

// CHECK-LABEL: func.func @type_sum_over_pairs_per_head
// CHECK: %[[SUMS:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: htmpl.traversal edges pairs({{.*}}) outs(%[[SUMS]] : memref<?x2xf32> as compact)
// CHECK: %[[SLICES:.*]] = memref.expand_shape %{{.*}} {{\[}}[0], [1, 2, 3]] output_shape [%{{.*}}, 2, 1, 4] : memref<?x8xf32> into memref<?x2x1x4xf32>
// CHECK: htmpl.gemm lhs(%[[SUMS]] : memref<?x2xf32>) rhs(%{{.*}} : memref<?x8xf32>) out(%[[SLICES]] : memref<?x2x1x4xf32>) segments(%{{.*}}) {transpose_lhs}
hgraph.func @type_sum_over_pairs_per_head(%g: !hgraph.graph,
    %z: !hgraph.edge<8xf32, heads = 2> {hgraph.name = "z", hgraph.materialization = #hgraph.materialization<compact>},
    %s: !hgraph.edge<2xf32, heads = 2> {hgraph.name = "s"})
    -> (!hgraph.weight<edge, 8xf32> {hgraph.name = "d_a", hgraph.role = "grad"}) {
  %m = hgraph.scale %s, %z : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  %d = hgraph.type_sum %m : !hgraph.edge<8xf32, heads = 2> -> !hgraph.weight<edge, 8xf32>
  hgraph.return %d : !hgraph.weight<edge, 8xf32>
}
