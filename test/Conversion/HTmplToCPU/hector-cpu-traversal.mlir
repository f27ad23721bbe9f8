// hector-cpu-traversal: a COO traversal with accumulates into destination
// rows runs, when (edge type, destination) is sorted, as a parallel loop over
// blocks of destination nodes, each walking every edge type's run of edges
// into its block (binary searches); accumulates into destination rows become
// plain read-modify-writes, others stay atomic. One with accumulates into
// edge-type rows only runs one iteration per edge type. A pair-order
// traversal with accumulates into pair rows runs one iteration per block of
// pairs. The order is checked first; unsorted arrays take the unchanged
// traversal (atomics, htmpl-to-loops).

// RUN: hector-opt %s --hector-cpu-traversal --split-input-file | FileCheck %s
// RUN: hector-opt %s --hector-cpu-traversal --htmpl-to-loops --split-input-file \
// RUN:   | FileCheck %s --check-prefix=LOOPS

// CHECK-LABEL: func.func @aggregate(
// CHECK-SAME: %[[SRC:[^:]*]]: memref<?xi32>, %[[DST:[^:]*]]: memref<?xi32>, %[[ETY:[^:]*]]: memref<?xi32>
// The order check, once for both traversals of the same arrays.
// CHECK: %[[CELL:.*]] = memref.alloca() : memref<i32>
// CHECK: scf.parallel
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[CELL]][]
// CHECK: %[[FLAG:.*]] = arith.cmpi ne
// CHECK: scf.if %[[FLAG]] {
// CHECK: arith.ceildivsi %{{.*}}, %c1024
// CHECK: arith.maxsi %{{.*}}, %c64
// CHECK: scf.parallel
// CHECK: scf.while
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %{{.*}}
// CHECK: %[[D:.*]] = memref.load %[[DST]][%[[E]]]
// CHECK: %[[DI:.*]] = arith.index_cast %[[D]]
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[%[[DI]], %{{.*}}]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]]
// CHECK: memref.store %[[NEW]], %{{.*}}[%[[DI]], %{{.*}}]
// CHECK: memref.atomic_rmw maximumf
// CHECK: } else {
// CHECK: htmpl.traversal edges coo
// CHECK: htmpl.accumulate add
// CHECK: htmpl.accumulate max
// CHECK-NOT: memref.alloca
// CHECK: scf.if %[[FLAG]] {
// CHECK: } else {
// CHECK: htmpl.traversal edges coo

// LOOPS-LABEL: func.func @aggregate(
// LOOPS-NOT: htmpl.
// LOOPS: } else {
// LOOPS: memref.atomic_rmw addf
// LOOPS: memref.atomic_rmw maximumf
func.func @aggregate(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                     %x: memref<?x4xf32>, %out: memref<?x4xf32>, %back: memref<?x4xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x4xf32> as src)
      outs(%out : memref<?x4xf32> as dst, %back : memref<?x4xf32> as src) {
  ^bb0(%e: index, %rx: index, %ro: index, %rb: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %f = %c0 to %c4 step %c1 {
      %v = memref.load %x[%rx, %f] : memref<?x4xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x4xf32>
      htmpl.accumulate max %v, %back[%rb, %f] : f32, memref<?x4xf32>
    }
  }
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x4xf32> as src) outs(%out : memref<?x4xf32> as dst) {
  ^bb0(%e: index, %rx: index, %ro: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%rx, %c0] : memref<?x4xf32>
    htmpl.accumulate add %v, %out[%ro, %c0] : f32, memref<?x4xf32>
  }
  return
}

// -----

// Nothing to gain: no accumulate into a destination row (here into a source
// row), or one whose buffer is also written elsewhere than at a destination
// row. Both are left to htmpl-to-loops.
// CHECK-LABEL: func.func @no_gain(
// CHECK-NOT: scf.if
// CHECK: htmpl.traversal
// CHECK: htmpl.traversal
func.func @no_gain(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                   %x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x4xf32> as dst) outs(%y : memref<?x4xf32> as src) {
  ^bb0(%e: index, %rx: index, %ry: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%rx, %c0] : memref<?x4xf32>
    htmpl.accumulate add %v, %y[%ry, %c0] : f32, memref<?x4xf32>
  }
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x4xf32> as src) outs(%y : memref<?x4xf32> as dst) {
  ^bb0(%e: index, %rx: index, %ry: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%rx, %c0] : memref<?x4xf32>
    htmpl.accumulate add %v, %y[%ry, %c0] : f32, memref<?x4xf32>
    memref.store %v, %y[%rx, %c0] : memref<?x4xf32>
  }
  return
}

// -----

// Accumulates into edge-type rows only (a per-type gradient): one iteration
// per type, over its run of edges; the accumulate is plain.
// CHECK-LABEL: func.func @per_type(
// CHECK-SAME: %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %[[ETY:[^:]*]]: memref<?xi32>, %{{[^:]*}}: memref<?x4xf32>, %[[GA:[^:]*]]: memref<?x4xf32>
// CHECK: scf.if %{{.*}} {
// CHECK: %[[R:.*]] = memref.dim %[[GA]], %{{.*}}
// CHECK: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[R]])
// CHECK: scf.while
// CHECK: scf.while
// CHECK: scf.for
// CHECK: %[[TY:.*]] = memref.load %[[ETY]]
// CHECK: %[[TI:.*]] = arith.index_cast %[[TY]]
// CHECK: %[[OLD:.*]] = memref.load %[[GA]][%[[TI]], %{{.*}}]
// CHECK: arith.addf %[[OLD]]
// CHECK: memref.store {{.*}}, %[[GA]][%[[TI]], %{{.*}}]
// CHECK: } else {
// CHECK: htmpl.traversal
func.func @per_type(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                    %x: memref<?x4xf32>, %ga: memref<?x4xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x4xf32> as src) outs(%ga : memref<?x4xf32> as etype) {
  ^bb0(%e: index, %rx: index, %rt: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %f = %c0 to %c4 step %c1 {
      %v = memref.load %x[%rx, %f] : memref<?x4xf32>
      htmpl.accumulate add %v, %ga[%rt, %f] : f32, memref<?x4xf32>
    }
  }
  return
}

// -----

// Pair order: per-pair sums run over blocks of at least 64 pairs (at most
// 1024 blocks), each over the slots whose pair compact_map[pair_eid[k]] lies
// in its block (two binary searches); the sums become plain
// read-modify-writes, the accumulate into the destination row stays atomic.
// Unless compact_map[pair_eid[k]] is non-decreasing, the traversal runs
// unchanged.
// CHECK-LABEL: func.func @pair_blocks(
// CHECK-SAME: %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %[[PEID:[^:]*]]: memref<?xi32>, %[[MAP:[^:]*]]: memref<?xi32>
// CHECK: %[[CELL:.*]] = memref.alloca() : memref<i32>
// CHECK: scf.parallel
// CHECK: memref.load %[[PEID]]
// CHECK: memref.load %[[MAP]]
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[CELL]][]
// CHECK: %[[FLAG:.*]] = arith.cmpi ne
// CHECK: scf.if %[[FLAG]] {
// CHECK: arith.ceildivsi %{{.*}}, %c1024
// CHECK: arith.maxsi %{{.*}}, %c64
// CHECK: scf.parallel
// CHECK: scf.while
// CHECK: scf.while
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}}
// CHECK: %[[E:.*]] = memref.load %[[PEID]][%[[K]]]
// CHECK: %[[EI:.*]] = arith.index_cast %[[E]]
// CHECK: %[[P:.*]] = memref.load %[[MAP]][%[[EI]]]
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[%[[PI]], %{{.*}}]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]]
// CHECK: memref.store %[[NEW]], %{{.*}}[%[[PI]], %{{.*}}]
// CHECK: memref.atomic_rmw addf
// CHECK: } else {
// CHECK: htmpl.traversal edges pairs

// LOOPS-LABEL: func.func @pair_blocks(
// LOOPS-NOT: htmpl.
// LOOPS: } else {
// LOOPS: memref.atomic_rmw addf
// LOOPS: memref.atomic_rmw addf
func.func @pair_blocks(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                       %pair_eid: memref<?xi32>, %map: memref<?xi32>,
                       %g: memref<?x4xf32>, %sums: memref<?x4xf32>, %out: memref<?x4xf32>) {
  htmpl.traversal edges pairs(%src, %dst, %ety, %pair_eid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%g : memref<?x4xf32> as dst)
      outs(%sums : memref<?x4xf32> as compact, %out : memref<?x4xf32> as dst) {
  ^bb0(%e: index, %rg: index, %rs: index, %ro: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %f = %c0 to %c4 step %c1 {
      %v = memref.load %g[%rg, %f] : memref<?x4xf32>
      htmpl.accumulate add %v, %sums[%rs, %f] : f32, memref<?x4xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x4xf32>
    }
  }
  return
}
