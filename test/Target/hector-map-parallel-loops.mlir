// RUN: hector-opt %s --split-input-file --hector-map-parallel-loops=block-size=128 --verify-diagnostics | FileCheck %s
// RUN: not hector-opt %s --split-input-file --hector-map-parallel-loops=block-size=2048 2>&1 | FileCheck %s --check-prefix=SIZE

// A flat 2-D parallel loop of host code becomes one dimension of N * 8
// iterations (the last dimension varying fastest) split into blocks of 128
// threads: blocks on block_x, threads on thread_x, past-the-end threads
// guarded, the indices recovered by remainder and quotient.
// CHECK-LABEL: func.func @flat
// CHECK-SAME: (%[[M:.*]]: memref<?x8xf32>, %[[N:.*]]: index)
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[TOTAL:.*]], %[[C128]] : index
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[BLOCKS]])
// CHECK-NEXT: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[C128]])
// CHECK-NEXT: %[[BASE:.*]] = arith.muli %[[B]], %[[C128]] : index
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[BASE]], %[[T]] : index
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi slt, %[[I]], %[[TOTAL]] : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK-NEXT: %[[J:.*]] = arith.remsi %[[I]], %{{.*}} : index
// CHECK-NEXT: %[[K:.*]] = arith.divsi %[[I]], %{{.*}} : index
// CHECK: memref.store %{{.*}}, %[[M]]
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = block_x
// SIZE: error: hector-map-parallel-loops: block size 2048 is outside [1, 1024]
func.func @flat(%m: memref<?x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    memref.store %f, %m[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// A loop with a reduction has no GPU form: an error at the loop.
func.func @reduction(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{a parallel loop with reductions cannot be mapped to GPU threads}}
  %s = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %one = arith.constant 1.0 : f32
    scf.reduce(%one : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  return %s : f32
}
