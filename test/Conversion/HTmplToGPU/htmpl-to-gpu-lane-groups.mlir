// RUN: hector-opt %s --split-input-file --htmpl-to-gpu --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --split-input-file --htmpl-to-gpu="lanes-per-instance=8" --canonicalize --cse | FileCheck %s --check-prefix=FIXED
// RUN: not hector-opt %s --split-input-file --htmpl-to-gpu="lanes-per-instance=12" 2>&1 | FileCheck %s --check-prefix=BAD

// Lane groups: a warp-mapped traversal runs each instance on the fewest
// lanes (a power of two, at least 16) that leave each lane at most 4
// iterations of its longest feature loop, so a 64-wide row gets half a warp
// and a warp walks 2 edges at once. Each group has its own chunk of 32
// edges, its own shared row (64 elements + 16 of padding, so that the two
// groups of a warp use different banks), and syncs and shuffles over its
// own lanes only (the mask is 16 ones shifted to the group's first lane;
// the shuffles' segment is 16 lanes: (32 - 16) << 8 | 31 = 4127).
// lanes-per-instance=8 fixes 8 lanes (rows 64 + 8 apart, segment 6175).

// BAD: lanes-per-instance must be 0 or a power of two from 1 to 32, got 12

// CHECK-LABEL: func.func @aggregate
// CHECK-DAG: %[[ONES:[-a-zA-Z0-9_]+]] = arith.constant 65535 : i32
// CHECK: %[[E:[-a-zA-Z0-9_]+]] = memref.dim
// CHECK: arith.ceildivui %[[E]], %c512 : index
// CHECK: gpu.launch {{.*}} threads(%[[TX:[-a-zA-Z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, {{.*}} workgroup(%[[BUF:[-a-zA-Z0-9_]+]] : memref<1280xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %[[TX]], %c16 : index
// CHECK: %[[GROUP:[-a-zA-Z0-9_]+]] = arith.divui %[[TX]], %c16 : index
// CHECK: %[[INWARP:[-a-zA-Z0-9_]+]] = arith.remui %[[TX]], %c32 : index
// CHECK: %[[FIRST:[-a-zA-Z0-9_]+]] = arith.subi %[[INWARP]], %[[LANE]] : index
// CHECK: %[[FIRST32:[-a-zA-Z0-9_]+]] = arith.index_cast %[[FIRST]] : index to i32
// CHECK: %[[MASK:[-a-zA-Z0-9_]+]] = arith.shli %[[ONES]], %[[FIRST32]] : i32
// CHECK: %[[BASE:[-a-zA-Z0-9_]+]] = arith.muli %[[GROUP]], %c80 : index
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c64 step %c16 {
// CHECK: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK: scf.for
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[F:[-a-zA-Z0-9_]+]]] : memref<?x64xf32>
// CHECK: arith.addi %[[BASE]], %[[F]] : index
// CHECK-NOT: nvvm.bar.warp.sync %c-1
// FIXED-LABEL: func.func @aggregate
// FIXED: workgroup(%{{.*}} : memref<2304xf32, #gpu.address_space<workgroup>>)
// FIXED: arith.remui %{{.*}}, %c8 : index
// FIXED: arith.muli %{{.*}}, %c72 : index
func.func @aggregate(%src: memref<?xi32>, %dst: memref<?xi32>,
                     %ety: memref<?xi32>, %norm: memref<?xf32>,
                     %z: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%norm : memref<?xf32> as edge, %z : memref<?x64xf32> as edge)
      outs(%out : memref<?x64xf32> as dst) {
  ^bb0(%e: index, %rn: index, %rz: index, %ro: index):
    %n = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      %p = arith.mulf %n, %v : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

// -----

// A dot product is reduced within the group: four butterfly steps (in both
// kernels: the 16-byte variant, then the general one).
// CHECK-LABEL: func.func @score
// CHECK-COUNT-4: arith.mulf {{.*}} fastmath<contract>
// CHECK: %[[PART:[-a-zA-Z0-9_]+]] = arith.addf
// CHECK: %[[S8:[-a-zA-Z0-9_]+]] = nvvm.shfl.sync bfly %[[MASK:[-a-zA-Z0-9_]+]], %[[PART]], %c8_i32, %c4127_i32 : f32 -> f32
// CHECK: %[[R8:[-a-zA-Z0-9_]+]] = arith.addf %[[PART]], %[[S8]] fastmath<contract> : f32
// CHECK: nvvm.shfl.sync bfly %[[MASK]], %[[R8]], %c4_i32, %c4127_i32 : f32 -> f32
// CHECK: nvvm.shfl.sync bfly %[[MASK]], %{{.*}}, %c2_i32, %c4127_i32 : f32 -> f32
// CHECK: nvvm.shfl.sync bfly %[[MASK]], %{{.*}}, %c1_i32, %c4127_i32 : f32 -> f32
// CHECK: } else {
// CHECK-COUNT-4: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: return
// FIXED-LABEL: func.func @score
// FIXED: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32, %c6175_i32 : f32 -> f32
// FIXED-NOT: %c8_i32
func.func @score(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                 %z: memref<?x64xf32>, %a: memref<?x64xf32>,
                 %s: memref<?x1xf32>, %m: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge, %a : memref<?x64xf32> as etype)
      outs(%s : memref<?x1xf32> as edge, %m : memref<?x1xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ra: index, %rs: index, %rm: index):
    %d = scf.for %f = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %z[%rz, %f] : memref<?x64xf32>
      %y = memref.load %a[%ra, %f] : memref<?x64xf32>
      %p = arith.mulf %x, %y : f32
      %q = arith.addf %acc, %p : f32
      scf.yield %q : f32
    }
    memref.store %d, %s[%rs, %c0] : memref<?x1xf32>
    htmpl.accumulate max %d, %m[%rm, %c0] : f32, memref<?x1xf32>
  }
  return
}

// -----

// Per-head loops of 16 features (the head loop unrolled): 16 lanes, one
// iteration each, where a whole warp would leave half its lanes idle.
// CHECK-LABEL: func.func @heads
// CHECK-DAG: arith.constant 65535 : i32
// CHECK: workgroup(%{{.*}} : memref<1280xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.remui %{{.*}}, %c16 : index
func.func @heads(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                 %alpha: memref<?x4xf32>, %z: memref<?x64xf32>,
                 %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%alpha : memref<?x4xf32> as edge, %z : memref<?x64xf32> as edge)
      outs(%out : memref<?x64xf32> as dst) {
  ^bb0(%e: index, %ra: index, %rz: index, %ro: index):
    scf.for %h = %c0 to %c4 step %c1 {
      %s = memref.load %alpha[%ra, %h] : memref<?x4xf32>
      %x = math.exp %s : f32
      %base = arith.muli %h, %c16 : index
      scf.for %f = %c0 to %c16 step %c1 {
        %col = arith.addi %base, %f : index
        %v = memref.load %z[%rz, %col] : memref<?x64xf32>
        %p = arith.mulf %x, %v : f32
        htmpl.accumulate add %p, %out[%ro, %col] : f32, memref<?x64xf32>
      }
    }
  }
  return
}

// -----

// A loop of unknown length (the edges of a node) keeps the whole warp, and
// its lanes' loops are unrolled by 4 (four loads in flight per lane), with a
// remainder loop; the upper bound is first raised to the lane's start, so
// that a lane past the end of a short row counts no iterations.
// CHECK-LABEL: func.func @degree_sum
// CHECK: gpu.launch
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c32 : index
// CHECK: %[[BEGIN:[-a-zA-Z0-9_]+]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[END:[-a-zA-Z0-9_]+]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[START:[-a-zA-Z0-9_]+]] = arith.addi %[[BEGIN]], %[[LANE]] : index
// CHECK: %[[UPPER:[-a-zA-Z0-9_]+]] = arith.maxsi %[[END]], %[[START]] : index
// CHECK: %[[MAIN:[-a-zA-Z0-9_]+]] = scf.for %[[I:[-a-zA-Z0-9_]+]] = %[[START]] to %{{.*}} step %c128 iter_args
// CHECK-COUNT-4: memref.load
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[UPPER]] step %c32 iter_args(%{{.*}} = %[[MAIN]])
// CHECK: memref.load
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32, %c31_i32 : f32 -> f32
func.func @degree_sum(%rp: memref<?xi32>, %w: memref<?xf32>, %out: memref<?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal nodes ins(%rp : memref<?xi32> as whole, %w : memref<?xf32> as whole)
      outs(%out : memref<?x1xf32> as node) {
  ^bb0(%n: index, %r1: index, %r2: index, %ro: index):
    %n1 = arith.addi %n, %c1 : index
    %a = memref.load %rp[%n] : memref<?xi32>
    %b = memref.load %rp[%n1] : memref<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %s = scf.for %e = %ai to %bi step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %w[%e] : memref<?xf32>
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    }
    memref.store %s, %out[%ro, %c0] : memref<?x1xf32>
  }
  return
}
