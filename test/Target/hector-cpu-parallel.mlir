// hector-cpu-parallel: every outermost scf.parallel without reductions is
// outlined into a private function over a range of its linearised
// iterations and run through the CPU runtime's hector_cpu_parallel_for;
// captured values travel in a context struct (a memref as its descriptor).
// Nested parallel loops stay in the outlined body; loops with reductions
// are left alone (they run sequentially).

// RUN: hector-opt %s --hector-cpu-parallel --split-input-file | FileCheck %s
// RUN: hector-opt %s --hector-cpu-parallel --split-input-file \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm \
// RUN:   --convert-arith-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func private @two_dims_parallel(
// CHECK-SAME: %[[LO:.*]]: index, %[[HI:.*]]: index, %[[CTX:.*]]: !llvm.ptr)
// CHECK-SAME: llvm.linkage = #llvm.linkage<internal>
// CHECK: %[[D:.*]] = llvm.load {{.*}} -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[X:.*]] = builtin.unrealized_conversion_cast %[[D]] {{.*}} to memref<?x?xf32>
// CHECK: %[[S:.*]] = llvm.load {{.*}} -> f32
// CHECK: scf.for %[[L:.*]] = %[[LO]] to %[[HI]]
// Delinearised, the last dimension fastest: j = lb1 + (l mod n1) * s1.
// CHECK: %[[R:.*]] = arith.remui %[[L]]
// CHECK: %[[Q:.*]] = arith.divui %[[L]]
// CHECK: %[[V:.*]] = memref.load %[[X]]
// CHECK: arith.mulf %[[V]], %[[S]]
// CHECK: scf.parallel
// CHECK: return

// CHECK-LABEL: func.func @two_dims(
// CHECK: %[[C:.*]] = llvm.alloca {{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, f32, i64, i64, i64, i64, i64)>
// CHECK: arith.muli
// CHECK: llvm.store
// CHECK: %[[F:.*]] = constant @two_dims_parallel
// CHECK: call @hector_cpu_parallel_for(%[[F]], %[[C]], %{{.*}})
// A reduction stays a sequential scf.parallel.
// CHECK: scf.parallel {{.*}} init
// CHECK: func.func private @hector_cpu_parallel_for((index, index, !llvm.ptr) -> (), !llvm.ptr, index)

// After the LLVM lowering the casts have met their counterparts.
// LLVM-LABEL: llvm.func internal @two_dims_parallel(
// LLVM-NOT: unrealized_conversion_cast
// LLVM-LABEL: llvm.func @two_dims(
// LLVM: llvm.mlir.addressof @two_dims_parallel
// LLVM: llvm.call @hector_cpu_parallel_for(

func.func @two_dims(%x: memref<?x?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  scf.parallel (%i, %j) = (%c0, %c1) to (%n, %m) step (%c1, %c2) {
    %v = memref.load %x[%i, %j] : memref<?x?xf32>
    %w = arith.mulf %v, %s : f32
    memref.store %w, %x[%i, %j] : memref<?x?xf32>
    scf.parallel (%k) = (%c0) to (%c2) step (%c1) {
      memref.store %w, %x[%i, %k] : memref<?x?xf32>
    }
  }
  %init = arith.constant 0.0 : f32
  %sum = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%init) -> f32 {
    %v = memref.load %x[%i, %c0] : memref<?x?xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  memref.store %sum, %x[%c0, %c0] : memref<?x?xf32>
  return
}

// -----

// Two loops of one function get two functions; a loop inside scf.for still
// gets its context from one alloca at the top of the function.

// CHECK-LABEL: func.func private @loops_parallel(
// CHECK-LABEL: func.func private @loops_parallel_0(
// CHECK-LABEL: func.func @loops(
// CHECK-NEXT: llvm.mlir.constant(1 : i64)
// CHECK-NEXT: llvm.alloca
// CHECK-NEXT: llvm.mlir.constant(1 : i64)
// CHECK-NEXT: llvm.alloca
// CHECK: call @hector_cpu_parallel_for
// CHECK: scf.for
// CHECK: call @hector_cpu_parallel_for
func.func @loops(%x: memref<?xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %x[%i] : memref<?xf32>
  }
  scf.for %k = %c0 to %t step %c1 {
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %v = memref.load %x[%i] : memref<?xf32>
      %w = arith.addf %v, %one : f32
      memref.store %w, %x[%i] : memref<?xf32>
    }
  }
  return
}
