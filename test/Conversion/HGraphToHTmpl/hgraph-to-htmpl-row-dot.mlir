// RUN: hector-opt %s --hgraph-to-htmpl --canonicalize --cse -split-input-file | FileCheck %s
// RUN: hector-opt %s --hgraph-to-htmpl=fuse-softmax-aggregate=true --canonicalize --cse -split-input-file | FileCheck %s --check-prefix=FUSED

// RGAT's source score a_r · z_e with z compact-materialized: the pair GEMM
// that produces z computes the dot in its epilogue (row_dot), one value per
// (source, edge type) pair, and the score traversal reads that [P, 1]
// buffer through compact_map instead of a whole z row per edge.

// CHECK-LABEL: func.func @rgat
// CHECK-SAME: %[[MAP:[^:]+]]: memref<?xi32> {hector.arg = {name = "compact_map"
// CHECK-SAME: %[[A:[^:]+]]: memref<?x64xf32> {hector.arg = {name = "a"
// CHECK: %[[Z:.*]] = memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}} : memref<?x64x64xf32>) out(%[[Z]] : memref<?x64xf32>) segments(%{{.*}} : memref<?xi32>) row_dot(%[[A]] : memref<?x64xf32>) into(%[[S]] : memref<?x1xf32>)
// The score traversal reads s as compact and z not at all.
// CHECK: htmpl.traversal edges coo({{.*}}) compact_map(%[[MAP]] : memref<?xi32>) ins(%[[S]] : memref<?x1xf32> as compact,
// CHECK-NOT: %[[Z]] : memref<?x64xf32> as compact
// CHECK-SAME: outs(
// The aggregation still reads z per pair.
// CHECK: ins({{.*}}%[[Z]] : memref<?x64xf32> as compact
// Fused with the softmax, it reads z per pair too.
// FUSED-LABEL: func.func @rgat
// FUSED-SAME: %[[MAPF:[^:]+]]: memref<?xi32> {hector.arg = {name = "compact_map"
// FUSED: %[[ZF:.*]] = memref.alloc(%{{.*}}) : memref<?x64xf32>
// FUSED: htmpl.softmax_aggregate {{.*}} values(%[[ZF]] : memref<?x64xf32>[%[[MAPF]] : memref<?xi32>])
hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 64x64xf32> {hgraph.name = "W"},
                  %a: !hgraph.weight<edge, 64xf32> {hgraph.name = "a"},
                  %b: !hgraph.weight<edge, 64xf32> {hgraph.name = "b"}) -> !hgraph.node<64xf32> {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %Wb = hgraph.weight_product %W, %b : !hgraph.weight<edge, 64x64xf32>, !hgraph.weight<edge, 64xf32> -> !hgraph.weight<edge, 64xf32>
  %ht = hgraph.gather %h from dst : !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %bv = hgraph.typed_vector %Wb : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %sb = hgraph.dot %ht, %bv : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  hgraph.return %out : !hgraph.node<64xf32>
}

// -----

// The score returned per edge (a training forward saves it): it is stored
// from the pair values, read through compact_map.

// CHECK-LABEL: func.func @score_returned
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: htmpl.gemm {{.*}} row_dot(%{{.*}} : memref<?x16xf32>) into(%[[S]] : memref<?x1xf32>)
// CHECK: htmpl.traversal edges coo({{.*}}) compact_map({{.*}}) ins(%[[S]] : memref<?x1xf32> as compact) outs(%{{.*}} : memref<?x1xf32> as edge)
hgraph.func @score_returned(%g: !hgraph.graph, %h: !hgraph.node<16xf32> {hgraph.name = "h"},
                            %W: !hgraph.weight<edge, 16x16xf32> {hgraph.name = "W"},
                            %a: !hgraph.weight<edge, 16xf32> {hgraph.name = "a"}) -> (!hgraph.edge<16xf32> {hgraph.materialization = #hgraph.materialization<compact>}, !hgraph.edge<1xf32>) {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %sa = hgraph.dot %av, %z : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %z, %sa : !hgraph.edge<16xf32>, !hgraph.edge<1xf32>
}

// -----

// Several heads: one dot per head's block of columns, [P, heads] rows.

// CHECK-LABEL: func.func @heads
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: htmpl.gemm {{.*}} row_dot(%{{.*}} : memref<?x64xf32>) into(%[[S]] : memref<?x2xf32>)
// CHECK: htmpl.traversal edges coo({{.*}}) compact_map({{.*}}) ins(%[[S]] : memref<?x2xf32> as compact) outs(%{{.*}} : memref<?x2xf32> as edge)
hgraph.func @heads(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                   %W: !hgraph.weight<edge, 64x64xf32> {hgraph.name = "W"},
                   %a: !hgraph.weight<edge, 64xf32> {hgraph.name = "a"}) -> !hgraph.edge<2xf32, heads = 2> {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32, heads = 2>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32, heads = 2>
  %sa = hgraph.dot %z, %av : !hgraph.edge<64xf32, heads = 2> -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return %sa : !hgraph.edge<2xf32, heads = 2>
}

// -----

// Not fused: a dot with a row that is not a typed vector, and a z stored
// per edge.

// CHECK-LABEL: func.func @not_a_typed_vector
// CHECK-NOT: row_dot
// CHECK: return
hgraph.func @not_a_typed_vector(%g: !hgraph.graph, %h: !hgraph.node<16xf32> {hgraph.name = "h"},
                                %W: !hgraph.weight<edge, 16x16xf32> {hgraph.name = "W"}) -> !hgraph.edge<1xf32> {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %hd = hgraph.gather %h from dst : !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %s = hgraph.dot %z, %hd : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %s : !hgraph.edge<1xf32>
}

// -----

// CHECK-LABEL: func.func @per_edge
// CHECK-NOT: row_dot
// CHECK: return
hgraph.func @per_edge(%g: !hgraph.graph, %h: !hgraph.node<16xf32> {hgraph.name = "h"},
                      %W: !hgraph.weight<edge, 16x16xf32> {hgraph.name = "W"},
                      %a: !hgraph.weight<edge, 16xf32> {hgraph.name = "a"}) -> !hgraph.edge<1xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  hgraph.return %sa : !hgraph.edge<1xf32>
}
