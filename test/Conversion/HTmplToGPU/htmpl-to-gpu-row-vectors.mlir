// RUN: hector-opt %s --split-input-file --htmpl-to-gpu --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=PTX

// The 16-byte variant of a warp-mapped traversal. Where every row operand
// of a multiple of 4 floats starts on a 16-byte boundary (checked by the
// host per call), each lane runs 4 consecutive features of a row (lane l:
// features 4l .. 4l + 3 of a 64-wide row on 16 lanes) and reads them
// through memref.assume_alignment, so that LLVM merges them into one
// 128-bit load; otherwise the general kernel runs (lane l: features l,
// l + 16, ...).

// CHECK-LABEL: func.func @aggregate
// CHECK-DAG: %[[PZ:[-a-zA-Z0-9_]+]] = memref.extract_aligned_pointer_as_index %[[Z:[-a-zA-Z0-9_]+]] : memref<?x64xf32>
// CHECK-DAG: %[[RZ:[-a-zA-Z0-9_]+]] = arith.remui %[[PZ]], %c16 : index
// CHECK-DAG: arith.cmpi eq, %[[RZ]], %c0 : index
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: %[[AZ:[-a-zA-Z0-9_]+]] = memref.assume_alignment %[[Z]], 16 : memref<?x64xf32>
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c16 : index
// CHECK: %[[F0:[-a-zA-Z0-9_]+]] = arith.muli %[[LANE]], %c4 : index
// CHECK: memref.load %[[AZ]][%{{.*}}, %[[F0]]] : memref<?x64xf32>
// CHECK: %[[F1:[-a-zA-Z0-9_]+]] = arith.addi %[[F0]], %c1 : index
// CHECK: memref.load %[[AZ]][%{{.*}}, %[[F1]]] : memref<?x64xf32>
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: memref.assume_alignment
// CHECK: %[[GLANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c16 : index
// CHECK: memref.load %[[Z]][%{{.*}}, %[[GLANE]]] : memref<?x64xf32>
// CHECK: %[[G1:[-a-zA-Z0-9_]+]] = arith.addi %[[GLANE]], %c16 : index
// CHECK: memref.load %[[Z]][%{{.*}}, %[[G1]]] : memref<?x64xf32>
// CHECK: return

// PTX-LABEL: // gpu.module @aggregate_kernel
// PTX: ld.global.v4.b32
// PTX: ld.shared.v4.b32
// PTX: st.shared.v4.b32
// PTX-LABEL: // gpu.module @aggregate_kernel_0
// PTX-NOT: .v4.
// PTX: ld.global.b32
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

// No variant where a lane's run would not be merged or could not be whole:
// a store to a row in memory between the loads (LLVM cannot tell the
// buffers apart), and rows of 48 floats on 16 lanes (3 features a lane).

// CHECK-LABEL: func.func @node_sum
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: gpu.launch
// CHECK-NOT: memref.assume_alignment
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @node_sum(%x: memref<?x64xf32>, %y: memref<?x64xf32>,
                    %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal nodes ins(%x : memref<?x64xf32> as node, %y : memref<?x64xf32> as node)
      outs(%out : memref<?x64xf32> as node) {
  ^bb0(%n: index, %rx: index, %ry: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %a = memref.load %x[%rx, %f] : memref<?x64xf32>
      %b = memref.load %y[%ry, %f] : memref<?x64xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%ro, %f] : memref<?x64xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @narrow
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: gpu.launch
// CHECK-NOT: memref.assume_alignment
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @narrow(%src: memref<?xi32>, %dst: memref<?xi32>,
                  %ety: memref<?xi32>, %z: memref<?x48xf32>,
                  %out: memref<?x48xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x48xf32> as edge)
      outs(%out : memref<?x48xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ro: index):
    scf.for %f = %c0 to %c48 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x48xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x48xf32>
    }
  }
  return
}

// -----

// The choice is per loop: in the 16-byte variant, a loop that also stores
// rows into memory keeps the general lane mapping (lane l: features l,
// l + 16, ...) beside a loop that runs 16-byte runs.

// CHECK-LABEL: func.func @mixed
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: %[[LANE:[-a-zA-Z0-9_]+]] = arith.remui %{{.*}}, %c16 : index
// CHECK: %[[F0:[-a-zA-Z0-9_]+]] = arith.muli %[[LANE]], %c4 : index
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[F0]]] : memref<?x64xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[LANE]]] : memref<?x64xf32>
// CHECK: %[[G1:[-a-zA-Z0-9_]+]] = arith.addi %[[LANE]], %c16 : index
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[G1]]] : memref<?x64xf32>
// CHECK: } else {
func.func @mixed(%src: memref<?xi32>, %dst: memref<?xi32>,
                 %ety: memref<?xi32>, %z: memref<?x64xf32>,
                 %out: memref<?x64xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge)
      outs(%out : memref<?x64xf32> as dst, %y : memref<?x64xf32> as edge) {
  ^bb0(%e: index, %rz: index, %ro: index, %ry: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      htmpl.accumulate add %v, %out[%ro, %f] : f32, memref<?x64xf32>
    }
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%ry, %f] : memref<?x64xf32>
    }
  }
  return
}
