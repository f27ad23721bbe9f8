// REQUIRES: mlir-runner
// RUN: hector-opt %s --htmpl-to-loops --convert-scf-to-cf --convert-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

// Executes htmpl.softmax_aggregate on the CPU: 3 nodes, 4 edges, 2 heads
// of 2 columns, values read through a compact map. Worked out by hand:
//
// Node 0 has no incoming edges: zeros.
// Node 1, CSR row [e0, e1]; value rows 0, 1.
//   head 0: scores 0, ln 3 -> alpha 1/4, 3/4 (the maximum grows on e1):
//           1/4 [4, 8] + 3/4 [8, 4] = [7, 5]
//   head 1: scores 1, 1 -> 1/2, 1/2: 1/2 [12, 16] + 1/2 [0, 4] = [6, 10]
// Node 2, CSR row [e3, e2]; value rows 2, 0.
//   head 0: scores 5, 5 -> 1/2, 1/2: 1/2 [16, 0] + 1/2 [4, 8] = [10, 4]
//   head 1: scores 2, 2 + ln 3 -> 1/4, 3/4: 1/4 [4, 8] + 3/4 [12, 16]
//           = [10, 14]

memref.global "private" constant @row_ptr : memref<4xi32> = dense<[0, 0, 2, 4]>
memref.global "private" constant @eid : memref<4xi32> = dense<[0, 1, 3, 2]>
memref.global "private" constant @map : memref<4xi32> = dense<[0, 1, 0, 2]>
memref.global "private" constant @scores : memref<4x2xf32> = dense<[[0.0, 1.0], [1.09861229, 1.0], [5.0, 3.09861229], [5.0, 2.0]]>
memref.global "private" constant @values : memref<3x4xf32> = dense<[[4.0, 8.0, 12.0, 16.0], [8.0, 4.0, 0.0, 4.0], [16.0, 0.0, 4.0, 8.0]]>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @fused(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x2xf32>,
                 %z: memref<?x4xf32>, %map: memref<?xi32>, %o: memref<?x4xf32>) {
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s : memref<?x2xf32>)
      values(%z : memref<?x4xf32>[%map : memref<?xi32>])
      out(%o : memref<?x4xf32>)
  return
}

func.func @main() {
  %rp0 = memref.get_global @row_ptr : memref<4xi32>
  %eid0 = memref.get_global @eid : memref<4xi32>
  %map0 = memref.get_global @map : memref<4xi32>
  %s0 = memref.get_global @scores : memref<4x2xf32>
  %z0 = memref.get_global @values : memref<3x4xf32>
  %rp = memref.cast %rp0 : memref<4xi32> to memref<?xi32>
  %eid = memref.cast %eid0 : memref<4xi32> to memref<?xi32>
  %map = memref.cast %map0 : memref<4xi32> to memref<?xi32>
  %s = memref.cast %s0 : memref<4x2xf32> to memref<?x2xf32>
  %z = memref.cast %z0 : memref<3x4xf32> to memref<?x4xf32>
  // The output starts as garbage: the op writes every element.
  %out = memref.alloc() : memref<3x4xf32>
  %nan = arith.constant 0x7FC00000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      memref.store %nan, %out[%i, %j] : memref<3x4xf32>
    }
  }
  %outd = memref.cast %out : memref<3x4xf32> to memref<?x4xf32>
  call @fused(%rp, %eid, %s, %z, %map, %outd) : (memref<?xi32>, memref<?xi32>, memref<?x2xf32>, memref<?x4xf32>, memref<?xi32>, memref<?x4xf32>) -> ()
  // CHECK: sizes = [3, 4]
  // CHECK-NEXT: [0, 0, 0, 0],
  // CHECK-NEXT: [7, 5, 6, 10],
  // CHECK-NEXT: [10, 4, 10, 14]]
  %u = memref.cast %out : memref<3x4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<3x4xf32>
  return
}
