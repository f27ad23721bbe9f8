// RUN: hector-opt %s --split-input-file --hector-host-memory-to-gpu --verify-diagnostics | FileCheck %s

// Every buffer of a CUDA entry point is device memory: a temporary is a
// gpu.alloc, freed by gpu.dealloc, and a copy between buffers a gpu.memcpy.
// CHECK-LABEL: func.func @temporaries
// CHECK-SAME: (%[[IN:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK: %[[T:.*]] = gpu.alloc (%[[N]]) : memref<?xf32>
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: gpu.memcpy %[[IN]], %[[T]] : memref<?xf32>, memref<?xf32>
// CHECK: gpu.dealloc %[[T]] : memref<?xf32>
// CHECK-NOT: memref.alloc
func.func @temporaries(%in: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %t = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %in[%bx] : memref<?xf32>
    memref.store %v, %t[%bx] : memref<?xf32>
    gpu.terminator
  }
  memref.copy %t, %in : memref<?xf32> to memref<?xf32>
  memref.dealloc %t : memref<?xf32>
  return
}

// -----

// Host code reading a device buffer would fault at run time.
func.func @host_read(%in: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{host code would access device memory here}}
  %v = memref.load %in[%c0] : memref<?xf32>
  return %v : f32
}

// -----

// A kernel reading host stack memory would fault at run time.
func.func @kernel_reads_host_stack(%out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloca() : memref<1xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{a GPU kernel cannot use host memory}}
    %v = memref.load %s[%c0] : memref<1xf32>
    memref.store %v, %out[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}
