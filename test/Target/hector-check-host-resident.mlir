// RUN: hector-opt %s --split-input-file --hector-check-host-resident --verify-diagnostics | FileCheck %s

// A host-resident argument (pinned host memory) read in place by a kernel,
// through a view too, passes unchanged.
// CHECK-LABEL: func.func @kernel_reads
// CHECK: gpu.launch
func.func @kernel_reads(%h: memref<?x8xf32> {hector.arg = {name = "h", role = "input", shape = ["N", 8], host_resident = true}},
                        %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = memref.subview %h[0, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %row[%c0, %tx] : memref<1x8xf32, strided<[8, 1]>>
    memref.store %v, %out[%c0, %tx] : memref<?x8xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @host_read(%h: memref<?x8xf32> {hector.arg = {name = "h", role = "input", shape = ["N", 8], host_resident = true}}) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{host-resident argument 'h' is read by host code here}}
  %v = memref.load %h[%c0, %c0] : memref<?x8xf32>
  return %v : f32
}

// -----

func.func @kernel_writes(%h: memref<?x8xf32> {hector.arg = {name = "h", role = "input", shape = ["N", 8], host_resident = true}}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{host-resident argument 'h' is written here; host-resident inputs are read-only}}
    memref.store %f, %h[%c0, %tx] : memref<?x8xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @copied(%h: memref<?x8xf32> {hector.arg = {name = "h", role = "input", shape = ["N", 8], host_resident = true}},
                  %d: memref<?x8xf32>) {
  // expected-error @+1 {{host-resident argument 'h' is read by host code here (a copy to the device or a host loop)}}
  memref.copy %h, %d : memref<?x8xf32> to memref<?x8xf32>
  return
}
