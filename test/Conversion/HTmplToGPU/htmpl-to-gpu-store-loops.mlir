// RUN: hector-opt %s --split-input-file --htmpl-to-gpu --canonicalize --cse | FileCheck %s

// Stores from several feature loops into one buffer the body never reads
// (a per-head row: the head loop is unrolled into one 16-wide feature loop
// per head). Each loop gives each of its elements to one lane, so the
// traversal stays warp-mapped (16-lane groups, 512 edges a block); the
// group synchronises after each loop, so that stores of two loops to the
// same element would land in program order.

// CHECK-LABEL: func.func @per_head_rows
// CHECK: arith.ceildivui %{{.*}}, %c512 : index
// CHECK: gpu.launch
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c16 : index
// CHECK: %[[MASK:[-a-zA-Z0-9_]+]] = arith.shli %c65535_i32
// CHECK: scf.for %[[E:[-a-zA-Z0-9_]+]] =
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[E]], %[[LANE]]] : memref<?x64xf32>
// CHECK-NEXT: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK: %[[C16:[-a-zA-Z0-9_]+]] = arith.addi %[[LANE]], %c16 : index
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[E]], %[[C16]]] : memref<?x64xf32>
// CHECK-NEXT: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK-COUNT-2: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK-NOT: nvvm.bar.warp.sync
// CHECK: gpu.terminator
func.func @per_head_rows(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                         %g: memref<?x4xf32>, %b: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%g : memref<?x4xf32> as edge, %b : memref<?x64xf32> as etype)
      outs(%out : memref<?x64xf32> as edge) {
  ^bb0(%e: index, %rg: index, %rb: index, %ro: index):
    scf.for %h = %c0 to %c4 step %c1 {
      %s = memref.load %g[%rg, %h] : memref<?x4xf32>
      scf.for %f = %c0 to %c16 step %c1 {
        %base = arith.muli %h, %c16 : index
        %col = arith.addi %base, %f : index
        %v = memref.load %b[%rb, %col] : memref<?x64xf32>
        %p = arith.mulf %s, %v : f32
        memref.store %p, %out[%ro, %col] : memref<?x64xf32>
      }
    }
  }
  return
}

// -----

// One loop alone stores into the buffer: no barrier is needed.
// CHECK-LABEL: func.func @one_loop
// CHECK: gpu.launch
// CHECK: memref.store
// CHECK-NOT: nvvm.bar.warp.sync
// CHECK: gpu.terminator
func.func @one_loop(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                    %b: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%b : memref<?x64xf32> as etype) outs(%out : memref<?x64xf32> as edge) {
  ^bb0(%e: index, %rb: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %b[%rb, %f] : memref<?x64xf32>
      memref.store %v, %out[%ro, %f] : memref<?x64xf32>
    }
  }
  return
}

// -----

// A loop whose stores do not follow its variable (every lane would write
// element 0) and a store from uniform code next to a loop's: neither is
// the body's meaning on lanes, so one edge per thread (256 a block).
// CHECK-LABEL: func.func @not_per_lane
// CHECK: arith.ceildivui %{{.*}}, %c256 : index
// CHECK-NOT: nvvm.bar.warp.sync
// CHECK-NOT: nvvm.shfl.sync
// CHECK: return
// CHECK-LABEL: func.func @uniform_and_loop
// CHECK: arith.ceildivui %{{.*}}, %c256 : index
// CHECK-NOT: nvvm.bar.warp.sync
// CHECK: return
func.func @not_per_lane(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                        %b: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%b : memref<?x64xf32> as etype) outs(%out : memref<?x64xf32> as edge) {
  ^bb0(%e: index, %rb: index, %ro: index):
    scf.for %f = %c0 to %c16 step %c1 {
      %v = memref.load %b[%rb, %f] : memref<?x64xf32>
      memref.store %v, %out[%ro, %f] : memref<?x64xf32>
    }
    scf.for %f = %c16 to %c32 step %c1 {
      %v = memref.load %b[%rb, %f] : memref<?x64xf32>
      memref.store %v, %out[%ro, %c0] : memref<?x64xf32>
    }
  }
  return
}

func.func @uniform_and_loop(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                            %b: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c63 = arith.constant 63 : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%b : memref<?x64xf32> as etype) outs(%out : memref<?x64xf32> as edge) {
  ^bb0(%e: index, %rb: index, %ro: index):
    scf.for %f = %c0 to %c16 step %c1 {
      %v = memref.load %b[%rb, %f] : memref<?x64xf32>
      memref.store %v, %out[%ro, %f] : memref<?x64xf32>
    }
    memref.store %zero, %out[%ro, %c63] : memref<?x64xf32>
  }
  return
}
