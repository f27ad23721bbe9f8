// hector-cpu-check-allocations refuses what it could not give a failure path
// that frees exactly what is held and returns.

// RUN: hector-opt %s --hector-cpu-check-allocations --split-input-file --verify-diagnostics

// expected-error @+1 {{hector-cpu-check-allocations: a function with results allocates memory}}
func.func @results(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc(%n) : memref<?xf32>
  %v = memref.load %a[%c0] : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  return %v : f32
}

// -----

func.func @freed_elsewhere(%n: index, %flag: i1) {
  // expected-error @+1 {{hector-cpu-check-allocations: this buffer is freed in another block}}
  %a = memref.alloc(%n) : memref<?xf32>
  scf.if %flag {
    // expected-note @+1 {{freed here}}
    memref.dealloc %a : memref<?xf32>
  }
  return
}

// -----

func.func @yields(%n: index) -> () {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    // expected-error @+1 {{hector-cpu-check-allocations: cannot guard the rest of this allocation's block}}
    %t = memref.alloc() : memref<4xf32>
    %v = memref.load %t[%c0] : memref<4xf32>
    memref.dealloc %t : memref<4xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  return
}

// -----

// expected-error @+1 {{hector-cpu-check-allocations: 'hector_cpu_status' is already declared with another type}}
module {
  func.func private @hector_cpu_status(index)
  func.func @f(%n: index) {
    %a = memref.alloc(%n) : memref<?xf32>
    memref.dealloc %a : memref<?xf32>
    return
  }
}
