// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s

// Round trip of every htmpl operation and knob.

// CHECK-LABEL: func.func @gemm_forms
func.func @gemm_forms(%h: memref<?x64xf32>, %W: memref<?x64x32xf32>,
                      %W1: memref<64x32xf32>, %Wh: memref<?x4x16x8xf32>,
                      %z: memref<?x32xf32>, %src: memref<?xi32>,
                      %dst: memref<?xi64>, %seg: memref<?xi32>,
                      %c: memref<?xf32>, %alpha: memref<?x4xf32>,
                      %dW: memref<?x64x32xf32>) {
  // Typed forward GEMM: gather by source, per-type segments.
  // CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}} : memref<?x64x32xf32>) out(%{{.*}} : memref<?x32xf32>) segments(%{{.*}} : memref<?xi32>)
  htmpl.gemm lhs(%h : memref<?x64xf32>[%src : memref<?xi32>])
             rhs(%W : memref<?x64x32xf32>) out(%z : memref<?x32xf32>)
             segments(%seg : memref<?xi32>)
  // Single weight, scatter with atomics, per-row scalar, schedule knobs.
  // CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>) rhs(%{{.*}} : memref<64x32xf32>) out(%{{.*}} : memref<?x32xf32>[%{{.*}} : memref<?xi64>]) row_scale(%{{.*}} : memref<?xf32>) {accumulate, atomic, launch_bounds = 128 : i64, tile = array<i64: 32, 32, 16>}
  htmpl.gemm lhs(%h : memref<?x64xf32>) rhs(%W1 : memref<64x32xf32>)
             out(%z : memref<?x32xf32>[%dst : memref<?xi64>])
             row_scale(%c : memref<?xf32>)
             {accumulate, atomic, coarsen = 4, launch_bounds = 128, tile = array<i64: 32, 32, 16>}
  // Per-head block-diagonal typed weights with a per-head row scale.
  // CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>) rhs(%{{.*}} : memref<?x4x16x8xf32>) out(%{{.*}} : memref<?x32xf32>) segments(%{{.*}} : memref<?xi32>) row_scale(%{{.*}} : memref<?x4xf32>)
  htmpl.gemm lhs(%h : memref<?x64xf32>) rhs(%Wh : memref<?x4x16x8xf32>)
             out(%z : memref<?x32xf32>) segments(%seg : memref<?xi32>)
             row_scale(%alpha : memref<?x4xf32>)
  // Input gradient: transposed weights.
  // CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x32xf32>) rhs(%{{.*}} : memref<?x64x32xf32>) out(%{{.*}} : memref<?x64xf32>[%{{.*}} : memref<?xi32>]) segments(%{{.*}} : memref<?xi32>) {atomic, transpose_rhs}
  htmpl.gemm lhs(%z : memref<?x32xf32>) rhs(%W : memref<?x64x32xf32>)
             out(%h : memref<?x64xf32>[%src : memref<?xi32>])
             segments(%seg : memref<?xi32>) {atomic, transpose_rhs}
  // Weight gradient: outer products summed per type.
  // CHECK: htmpl.gemm lhs(%{{.*}} : memref<?x64xf32>[%{{.*}} : memref<?xi32>]) rhs(%{{.*}} : memref<?x32xf32>[%{{.*}} : memref<?xi64>]) out(%{{.*}} : memref<?x64x32xf32>) segments(%{{.*}} : memref<?xi32>) {atomic, transpose_lhs}
  htmpl.gemm lhs(%h : memref<?x64xf32>[%src : memref<?xi32>])
             rhs(%z : memref<?x32xf32>[%dst : memref<?xi64>])
             out(%dW : memref<?x64x32xf32>) segments(%seg : memref<?xi32>)
             {atomic, transpose_lhs}
  return
}

// CHECK-LABEL: func.func @edge_traversal
func.func @edge_traversal(%src: memref<?xi32>, %dst: memref<?xi32>,
                          %ety: memref<?xi32>, %map: memref<?xi32>,
                          %z: memref<?x16xf32>, %a: memref<?x16xf32>,
                          %out: memref<?x16xf32>) {
  // CHECK: htmpl.traversal edges coo(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>) compact_map(%{{.*}} : memref<?xi32>) ins(%{{.*}} : memref<?x16xf32> as compact, %{{.*}} : memref<?x16xf32> as etype) outs(%{{.*}} : memref<?x16xf32> as dst) {
  // CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
  // CHECK: htmpl.accumulate add %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : f32, memref<?x16xf32>
  // CHECK-NOT: htmpl.yield
  // CHECK: }
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%z : memref<?x16xf32> as compact, %a : memref<?x16xf32> as etype)
      outs(%out : memref<?x16xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ra: index, %ro: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    scf.for %f = %c0 to %c16 step %c1 {
      %x = memref.load %z[%rz, %f] : memref<?x16xf32>
      %y = memref.load %a[%ra, %f] : memref<?x16xf32>
      %p = arith.mulf %x, %y : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, memref<?x16xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @pairs
func.func @pairs(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                 %pair_eid: memref<?xi32>, %map: memref<?xi32>,
                 %g: memref<?x8xf32>, %sums: memref<?x8xf32>) {
  // CHECK: htmpl.traversal edges pairs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) compact_map(%{{.*}} : memref<?xi32>) ins(%{{.*}} : memref<?x8xf32> as dst) outs(%{{.*}} : memref<?x8xf32> as compact) {
  htmpl.traversal edges pairs(%src, %dst, %ety, %pair_eid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%g : memref<?x8xf32> as dst) outs(%sums : memref<?x8xf32> as compact) {
  ^bb0(%e: index, %rg: index, %rs: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %g[%rg, %c0] : memref<?x8xf32>
    htmpl.accumulate add %v, %sums[%rs, %c0] : f32, memref<?x8xf32>
  }
  return
}

// CHECK-LABEL: func.func @csr_and_nodes
func.func @csr_and_nodes(%rowptr: memref<?xi32>, %src: memref<?xi32>,
                         %eid: memref<?xi32>, %ety: memref<?xi32>,
                         %ntypes: memref<?xi32>, %x: memref<?x8xf32>,
                         %w: memref<?x8xf32>, %m: memref<?x8xf32>,
                         %y: memref<?x8xf32>) {
  // CHECK: htmpl.traversal edges csr(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) ins(%{{.*}} : memref<?x8xf32> as src) outs(%{{.*}} : memref<?x8xf32> as dst) launch_bounds(128) {
  htmpl.traversal edges csr(%rowptr, %src, %eid, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x8xf32> as src) outs(%m : memref<?x8xf32> as dst)
      launch_bounds(128) {
  ^bb0(%e: index, %rx: index, %rm: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%rx, %c0] : memref<?x8xf32>
    htmpl.accumulate max %v, %m[%rm, %c0] : f32, memref<?x8xf32>
  }
  // CHECK: htmpl.traversal nodes node_types(%{{.*}} : memref<?xi32>) ins(%{{.*}} : memref<?x8xf32> as node, %{{.*}} : memref<?x8xf32> as ntype, %{{.*}} : memref<?x8xf32> as whole) outs(%{{.*}} : memref<?x8xf32> as node) {
  htmpl.traversal nodes node_types(%ntypes : memref<?xi32>)
      ins(%x : memref<?x8xf32> as node, %w : memref<?x8xf32> as ntype, %m : memref<?x8xf32> as whole)
      outs(%y : memref<?x8xf32> as node) {
  ^bb0(%n: index, %rx: index, %rw: index, %unused: index, %ry: index):
    %c0 = arith.constant 0 : index
    %a = memref.load %x[%rx, %c0] : memref<?x8xf32>
    %b = memref.load %w[%rw, %c0] : memref<?x8xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %y[%ry, %c0] : memref<?x8xf32>
  }
  return
}
