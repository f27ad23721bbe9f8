// hector-cpu-check-allocations: every heap allocation of CPU code is
// tested. In a function's body, a NULL buffer (a temporary past the cap, or
// one malloc refused; the runtime has recorded why) branches to a block that
// frees the buffers held at that point and returns. Inside a loop, the rest
// of the loop's block is skipped (its own buffers freed), and the body
// tests hector_cpu_status() after the loop.

// RUN: hector-opt %s --hector-cpu-check-allocations --split-input-file | FileCheck %s
// RUN: hector-opt %s --hector-cpu-check-allocations --split-input-file \
// RUN:   --hector-cpu-parallel --convert-scf-to-cf --expand-strided-metadata \
// RUN:   --finalize-memref-to-llvm=use-generic-functions=true \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm \
// RUN:   --convert-func-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// Three buffers, the first freed before the third is allocated: each
// failure path frees exactly what is held then.
// CHECK-LABEL: func.func @body(
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[NA:.*]] = arith.cmpi eq, %[[PA]], %{{.*}} : index
// CHECK: cf.cond_br %[[NA]], ^[[FA:.*]], ^[[RA:.*]]
// CHECK: ^[[FA]]:
// CHECK-NEXT: return
// CHECK: ^[[RA]]:
// CHECK: %[[B:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[NB:.*]] = arith.cmpi eq, %[[PB]]
// CHECK: cf.cond_br %[[NB]], ^[[FB:.*]], ^[[RB:.*]]
// CHECK: ^[[FB]]:
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: return
// CHECK: ^[[RB]]:
// CHECK: memref.store
// CHECK: memref.dealloc %[[A]]
// CHECK: %[[C:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: cf.cond_br %{{.*}}, ^[[FC:.*]], ^[[RC:.*]]
// CHECK: ^[[FC]]:
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
// CHECK: ^[[RC]]:
// CHECK: memref.dealloc %[[C]]
// CHECK: memref.dealloc %[[B]]
// CHECK: return

// After the LLVM lowering the test is on the pointer the runtime returned.
// LLVM-LABEL: llvm.func @body(
// LLVM: %[[P:.*]] = llvm.call @_mlir_memref_to_llvm_alloc(
// LLVM: llvm.insertvalue %[[P]], %{{.*}}[1]
// LLVM: %[[I:.*]] = llvm.ptrtoint
// LLVM: llvm.icmp "eq" %[[I]]
// LLVM: llvm.cond_br

func.func @body(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  memref.store %v, %a[%c0] : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  memref.store %v, %b[%c0] : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  %c = memref.alloc(%n) : memref<?xf32>
  memref.store %v, %c[%c0] : memref<?xf32>
  memref.dealloc %c : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}

// -----

// A per-iteration buffer of a parallel loop (the CPU GEMM's private
// accumulators): the rest of the iteration runs only with it, and the body
// tests the status after the loop, freeing the buffer it holds.
// CHECK-LABEL: func.func @loop(
// CHECK: %[[H:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: cf.cond_br
// CHECK: scf.parallel
// CHECK: %[[T:.*]] = memref.alloc() : memref<64xf32>
// CHECK: %[[PT:.*]] = memref.extract_aligned_pointer_as_index %[[T]]
// CHECK: %[[NT:.*]] = arith.cmpi eq, %[[PT]]
// CHECK: scf.if %[[NT]] {
// CHECK-NEXT: } else {
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: memref.dealloc %[[T]]
// CHECK: }
// CHECK: scf.reduce
// CHECK: %[[S:.*]] = call @hector_cpu_status() : () -> i32
// CHECK: %[[F:.*]] = arith.cmpi ne, %[[S]], %{{.*}} : i32
// CHECK: cf.cond_br %[[F]], ^[[FAIL:.*]], ^[[REST:.*]]
// CHECK: ^[[FAIL]]:
// CHECK-NEXT: memref.dealloc %[[H]]
// CHECK-NEXT: return
// CHECK: ^[[REST]]:
// CHECK: memref.dealloc %[[H]]
// CHECK: func.func private @hector_cpu_status() -> i32

// LLVM-LABEL: llvm.func internal @loop_parallel(
// LLVM: llvm.call @_mlir_memref_to_llvm_alloc(
// LLVM: llvm.icmp "eq"
// LLVM-LABEL: llvm.func @loop(
// LLVM: llvm.call @hector_cpu_parallel_for(
// LLVM: llvm.call @hector_cpu_status()

func.func @loop(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %h = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %t = memref.alloc() : memref<64xf32>
    memref.store %v, %t[%c0] : memref<64xf32>
    %w = memref.load %t[%c0] : memref<64xf32>
    memref.store %w, %h[%i] : memref<?xf32>
    memref.dealloc %t : memref<64xf32>
    scf.reduce
  }
  memref.copy %h, %x : memref<?xf32> to memref<?xf32>
  memref.dealloc %h : memref<?xf32>
  return
}

// -----

// Nothing to check: no declaration is added.
// CHECK-LABEL: func.func @no_allocation(
// CHECK-NOT: hector_cpu_status
func.func @no_allocation(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f32
  memref.store %v, %x[%c0] : memref<?xf32>
  return
}
