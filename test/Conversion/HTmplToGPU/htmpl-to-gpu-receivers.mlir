// RUN: hector-opt %s --split-input-file --htmpl-to-gpu="lanes-per-instance=32" --canonicalize --cse | FileCheck %s

// Which receiving rows of htmpl.accumulate the GPU traversal kernels reduce
// before their atomics: the destination and the edge type, whose equal rows
// are adjacent in the edge order; not the source. In pair order, the pair
// and the edge type.

// Accumulations into the source row (the gradient of a gather at the
// source): equal sources are scattered over the (type, dst, src) edge order,
// so no warp-private row is kept; each lane adds its features straight into
// global memory (coalesced along the row).
// CHECK-LABEL: func.func @into_src
// CHECK-SAME: (%[[SRC:[-a-zA-Z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[Z:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>)
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: scf.for %[[EDGE:[-a-zA-Z0-9_]+]] =
// CHECK: %[[S:[-a-zA-Z0-9_]+]] = memref.load %[[SRC]][%[[EDGE]]]
// CHECK: %[[SI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[S]]
// CHECK: %[[V:[-a-zA-Z0-9_]+]] = memref.load %[[Z]][%[[EDGE]], %[[LANE]]]
// CHECK: memref.atomic_rmw addf %[[V]], %[[OUT]][%[[SI]], %[[LANE]]]
// CHECK-NOT: nvvm.bar.warp.sync
func.func @into_src(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                    %z: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge) outs(%out : memref<?x64xf32> as src) {
  ^bb0(%e: index, %rz: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

// -----

// Accumulations into the edge type's row (type_sum, the gradient of a
// per-type vector): edges are sorted by type, so the warp gathers them in
// its shared row and flushes it when the type changes (keyed by etype[e])
// and at the end of its chunk. The few type rows would take the flushes of
// every group, so the chunk is max(32, ceil(E / 32768)) edges, not 32.
// CHECK-LABEL: func.func @into_etype
// CHECK-SAME: (%{{.*}}: memref<?xi32>, %[[DST:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[ETY:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[Z:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>)
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.dim %[[DST]], %c0
// CHECK: %[[PER:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[E]], %c32768 : index
// CHECK: %[[CHUNK:[-a-zA-Z0-9_]+]] = arith.maxsi %[[PER]], %c32 : index
// CHECK: %[[WARPS:[-a-zA-Z0-9_]+]] = arith.muli %[[CHUNK]], %c8 : index
// CHECK: %[[BLOCKS:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[E]], %[[WARPS]] : index
// CHECK: gpu.launch {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<512xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[BEGIN:[-a-zA-Z0-9_]+]] = arith.muli %{{.*}}, %[[CHUNK]] : index
// CHECK: arith.addi %[[BEGIN]], %[[CHUNK]] : index
// CHECK: %[[LAST:[-a-zA-Z0-9_]+]] = scf.for %[[EDGE:[-a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %c1 iter_args(%[[CUR:[-a-zA-Z0-9_]+]] = %c-1) -> (index) {
// CHECK: %[[T:[-a-zA-Z0-9_]+]] = memref.load %[[ETY]][%[[EDGE]]]
// CHECK: %[[TI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[T]]
// CHECK: arith.cmpi ne, %[[TI]], %[[CUR]] : index
// CHECK: scf.if
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[CUR]], %{{.*}}]
// CHECK: memref.load %[[Z]][%[[EDGE]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: scf.yield %[[TI]] : index
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[LAST]], %{{.*}}]
func.func @into_etype(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                    %z: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge) outs(%out : memref<?x64xf32> as etype) {
  ^bb0(%e: index, %rz: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

// -----

// A one-element row of the edge type (a per-type sum of dot products, HGT's
// `μ` gradient) flushes one atomic per group: the chunk stays 32 edges
// (8 groups x 32 = 256 edges per block), not grown with E.
// CHECK-LABEL: func.func @narrow_etype
// CHECK-NOT: %c32768
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.dim
// CHECK: arith.ceildivui %[[E]], %c256 : index
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.muli %{{.*}}, %c32 : index
func.func @narrow_etype(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                        %z: memref<?x64xf32>, %q: memref<?x64xf32>, %out: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge, %q : memref<?x64xf32> as dst) outs(%out : memref<?x1xf32> as etype) {
  ^bb0(%e: index, %rz: index, %rq: index, %ro: index):
    %d = scf.for %f = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %a = memref.load %z[%rz, %f] : memref<?x64xf32>
      %b = memref.load %q[%rq, %f] : memref<?x64xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    htmpl.accumulate add %d, %out[%ro, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// A scalar body into the edge type's row: one thread per lane, each lane
// walking k = max(1, ceil(E / 2^20)) edges strided by the warp (coalesced
// at every step), holding its row's sum in registers and adding it to
// memory only when etype[e] changes; after the walk the lanes' sums are
// combined by the segmented warp reduction keyed by the held row, then one
// atomic per run.
// CHECK-LABEL: func.func @scalar_etype
// CHECK-SAME: (%{{.*}}: memref<?xi32>, %[[DST:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[ETY:[-a-zA-Z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?x1xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x1xf32>)
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.dim %[[DST]], %c0
// CHECK: %[[PER:[-a-zA-Z0-9_]+]] = arith.ceildivui %[[E]], %c1048576 : index
// CHECK: %[[K:[-a-zA-Z0-9_]+]] = arith.maxsi %[[PER]], %c1 : index
// CHECK: %[[SPAN:[-a-zA-Z0-9_]+]] = arith.muli %[[K]], %c32 : index
// CHECK: gpu.launch
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: %[[HELD:[-a-zA-Z0-9_]+]]:3 = scf.for %[[STEP:[-a-zA-Z0-9_]+]] = %c0 to %[[K]] step %c1 iter_args(%[[SUM:[-a-zA-Z0-9_]+]] = %{{.*}}, %[[ROW:[-a-zA-Z0-9_]+]] = %c-1, %{{.*}} = %c0) -> (f32, index, index) {
// CHECK: %[[R:[-a-zA-Z0-9_]+]]:2 = scf.if %{{.*}} -> (f32, index) {
// CHECK: %[[T:[-a-zA-Z0-9_]+]] = memref.load %[[ETY]]
// CHECK: %[[TI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[T]]
// CHECK: scf.yield %{{.*}}, %[[TI]] : f32, index
// CHECK: arith.cmpi ne, %[[R]]#1, %[[ROW]] : index
// CHECK: scf.if
// CHECK: memref.atomic_rmw addf %[[SUM]], %[[OUT]][%[[ROW]], %{{.*}}]
// CHECK: scf.yield
// CHECK: %[[KEY:[-a-zA-Z0-9_]+]] = arith.index_cast %[[HELD]]#1 : index to i32
// CHECK: gpu.shuffle up %[[KEY]], %c1_i32, %c32_i32 : i32
// CHECK: gpu.shuffle down %[[KEY]], %c1_i32, %c32_i32 : i32
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[HELD]]#1, %{{.*}}]
func.func @scalar_etype(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                        %s: memref<?x1xf32>, %out: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x1xf32> as edge) outs(%out : memref<?x1xf32> as etype) {
  ^bb0(%e: index, %rs: index, %ro: index):
    %x = memref.load %s[%rs, %c0] : memref<?x1xf32>
    htmpl.accumulate add %x, %out[%ro, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// A scalar body into the source row: plain atomics, no warp reduction.
// CHECK-LABEL: func.func @scalar_src
// CHECK-SAME: (%[[SRC:[-a-zA-Z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x1xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x1xf32>)
// CHECK-NOT: gpu.shuffle
// CHECK: %[[S:[-a-zA-Z0-9_]+]] = memref.load %[[SRC]]
// CHECK: %[[SI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[S]]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[SI]], %c0]
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.terminator
func.func @scalar_src(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                        %s: memref<?x1xf32>, %out: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x1xf32> as edge) outs(%out : memref<?x1xf32> as src) {
  ^bb0(%e: index, %rs: index, %ro: index):
    %x = memref.load %s[%rs, %c0] : memref<?x1xf32>
    htmpl.accumulate add %x, %out[%ro, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// One receiving row per traversal: the destination (first) is reduced
// across the warp, the edge type's row gets plain atomics in the body.
// CHECK-LABEL: func.func @dst_and_etype
// CHECK-SAME: %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x1xf32>, %[[W:[-a-zA-Z0-9_]+]]: memref<?x1xf32>)
// CHECK: %[[R:[-a-zA-Z0-9_]+]]:2 = scf.if %{{.*}} -> (f32, index) {
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[W]]
// CHECK: } else {
// CHECK: gpu.shuffle up
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[R]]#1, %c0]
func.func @dst_and_etype(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                        %s: memref<?x1xf32>, %out: memref<?x1xf32>, %w: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x1xf32> as edge) outs(%out : memref<?x1xf32> as dst, %w : memref<?x1xf32> as etype) {
  ^bb0(%e: index, %rs: index, %ro: index, %rw: index):
    %x = memref.load %s[%rs, %c0] : memref<?x1xf32>
    htmpl.accumulate add %x, %out[%ro, %c0] : f32, memref<?x1xf32>
    htmpl.accumulate add %x, %w[%rw, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// Accumulations into the (source, edge type) pair's row, in pair order
// (per-pair sums of a gradient): slot k visits edge pair_eid[k], and
// consecutive slots share their pair, so the warp gathers the row in shared
// memory and flushes it when compact_map[pair_eid[k]] changes. The rows read
// at the edge and at its destination are resolved through the same edge id.
// CHECK-LABEL: func.func @into_pair
// CHECK-SAME: (%{{.*}}: memref<?xi32>, %[[DST:[-a-zA-Z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[PEID:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[C:[-a-zA-Z0-9_]+]]: memref<?xf32>, %[[G:[-a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x64xf32>)
// CHECK: gpu.launch {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<512xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[LAST:[-a-zA-Z0-9_]+]] = scf.for %[[SLOT:[-a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %c1 iter_args(%[[CUR:[-a-zA-Z0-9_]+]] = %c-1) -> (index) {
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.load %[[PEID]][%[[SLOT]]]
// CHECK: %[[EI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[E]]
// CHECK: %[[P:[-a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[EI]]]
// CHECK: %[[PI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[P]]
// CHECK: arith.cmpi ne, %[[PI]], %[[CUR]] : index
// CHECK: scf.if
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[CUR]], %{{.*}}]
// CHECK: %[[T:[-a-zA-Z0-9_]+]] = memref.load %[[DST]][%[[EI]]]
// CHECK: %[[TI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[T]]
// CHECK: memref.load %[[C]][%[[EI]]]
// CHECK: memref.load %[[G]][%[[TI]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: scf.yield %[[PI]] : index
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%[[LAST]], %{{.*}}]
func.func @into_pair(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                     %pair_eid: memref<?xi32>, %map: memref<?xi32>, %c: memref<?xf32>,
                     %g: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges pairs(%src, %dst, %ety, %pair_eid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%c : memref<?xf32> as edge, %g : memref<?x64xf32> as dst)
      outs(%out : memref<?x64xf32> as compact) {
  ^bb0(%e: index, %rc: index, %rg: index, %ro: index):
    %s = memref.load %c[%rc] : memref<?xf32>
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %g[%rg, %f] : memref<?x64xf32>
      %p = arith.mulf %s, %v : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

// -----

// The destination is no receiving row in pair order (its equal rows are
// scattered over the pairs): its accumulations stay global atomics.
// CHECK-LABEL: func.func @pair_order_into_dst
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK: memref.atomic_rmw addf
// CHECK-NOT: nvvm.bar.warp.sync
func.func @pair_order_into_dst(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                               %pair_eid: memref<?xi32>, %z: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges pairs(%src, %dst, %ety, %pair_eid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge) outs(%out : memref<?x64xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

// -----

// A scalar body into the pair's row: one slot per thread, the lanes of one
// pair combined by the segmented warp reduction keyed by
// compact_map[pair_eid[k]].
// CHECK-LABEL: func.func @scalar_pair
// CHECK-SAME: (%{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[PEID:[-a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[-a-zA-Z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?x1xf32>, %[[OUT:[-a-zA-Z0-9_]+]]: memref<?x1xf32>)
// CHECK: %[[R:[-a-zA-Z0-9_]+]]:2 = scf.if %{{.*}} -> (f32, index) {
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.load %[[PEID]]
// CHECK: %[[EI:[-a-zA-Z0-9_]+]] = arith.index_cast %[[E]]
// CHECK: %[[P:[-a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[EI]]]
// CHECK: gpu.shuffle up
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]]
func.func @scalar_pair(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                       %pair_eid: memref<?xi32>, %map: memref<?xi32>,
                       %x: memref<?x1xf32>, %out: memref<?x1xf32>) {
  htmpl.traversal edges pairs(%src, %dst, %ety, %pair_eid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%x : memref<?x1xf32> as edge) outs(%out : memref<?x1xf32> as compact) {
  ^bb0(%e: index, %rx: index, %ro: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%rx, %c0] : memref<?x1xf32>
    htmpl.accumulate add %v, %out[%ro, %c0] : f32, memref<?x1xf32>
  }
  return
}
