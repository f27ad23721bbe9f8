// hector-cpu-parallel declares the pool's entry point; a module that
// already declares that name with another type is refused.

// RUN: hector-opt %s --hector-cpu-parallel --verify-diagnostics

// expected-error @+1 {{hector-cpu-parallel: 'hector_cpu_parallel_for' is already declared with another type}}
module {
  func.func private @hector_cpu_parallel_for(index)
  func.func @f(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      memref.store %one, %x[%i] : memref<?xf32>
    }
    return
  }
}
