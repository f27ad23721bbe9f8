// The CPU backend's stages on hand-written entry points over memrefs (what
// hgraph-to-htmpl + htmpl-to-loops produce): the loops stage leaves them as
// they are, the llvm stage is the LLVM dialect with C interfaces, llvmir is
// optimised LLVM IR calling only libc/libm (llvm.tanh becomes tanhf).

// RUN: hectorc %s --emit=loops | FileCheck %s --check-prefix=LOOPS
// RUN: hectorc %s --target=cpu --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: hectorc %s --target=cpu --emit=llvmir | FileCheck %s --check-prefix=IR
// RUN: hectorc %s --target=cpu --emit=llvmir --opt-level=0 | FileCheck %s --check-prefix=IR0

// LOOPS-LABEL: func.func @gather_scale_scatter(
// LOOPS-SAME: hector.arg = {name = "edge_src", role = "graph", shape = ["E"]}
// LOOPS: scf.parallel
// LOOPS: memref.atomic_rmw addf
// LOOPS-LABEL: func.func @softsign_tanh(
// LOOPS: memref.alloc
// LOOPS: math.tanh
// LOOPS: memref.dealloc

// Entry points get a C interface; parallel loops became branches.
// LLVM-LABEL: llvm.func @gather_scale_scatter(
// LLVM-NOT: scf.parallel
// LLVM: llvm.atomicrmw fadd
// LLVM-LABEL: llvm.func @_mlir_ciface_gather_scale_scatter(
// LLVM-LABEL: llvm.func @softsign_tanh(
// LLVM: llvm.call @malloc
// LLVM: llvm.intr.tanh
// LLVM: llvm.call @free
// LLVM-LABEL: llvm.func @_mlir_ciface_softsign_tanh(

// IR-DAG: declare {{.*}} @free(
// IR-DAG: declare {{.*}} @malloc(
// IR-LABEL: define void @_mlir_ciface_gather_scale_scatter(ptr
// IR: atomicrmw fadd
// IR-LABEL: define void @_mlir_ciface_softsign_tanh(ptr
// IR: declare float @llvm.tanh.f32(
// IR-NOT: mgpu

// IR0-LABEL: define void @gather_scale_scatter(
// IR0-LABEL: define void @_mlir_ciface_gather_scale_scatter(ptr

// out[dst[e], f] += norm[e] * h[src[e], f]
func.func @gather_scale_scatter(
    %src: memref<?xi32> {hector.arg = {role = "graph", name = "edge_src", shape = ["E"]}},
    %dst: memref<?xi32> {hector.arg = {role = "graph", name = "edge_dst", shape = ["E"]}},
    %norm: memref<?xf32> {hector.arg = {role = "graph", name = "edge_norm", shape = ["E"]}},
    %h: memref<?x8xf32> {hector.arg = {role = "input", name = "h", shape = ["N", 8]}},
    %out: memref<?x8xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 8]}})
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %e = memref.dim %src, %c0 : memref<?xi32>
  scf.parallel (%k, %f) = (%c0, %c0) to (%e, %c8) step (%c1, %c1) {
    %s = memref.load %src[%k] : memref<?xi32>
    %d = memref.load %dst[%k] : memref<?xi32>
    %si = arith.index_cast %s : i32 to index
    %di = arith.index_cast %d : i32 to index
    %v = memref.load %h[%si, %f] : memref<?x8xf32>
    %w = memref.load %norm[%k] : memref<?xf32>
    %p = arith.mulf %v, %w : f32
    %old = memref.atomic_rmw addf %p, %out[%di, %f] : (f32, memref<?x8xf32>) -> f32
  }
  return
}

// y = tanh(x) / (1 + |x|), through a temporary.
func.func @softsign_tanh(%x: memref<?x?xf32>, %y: memref<?x?xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  %t = memref.alloc(%n, %m) : memref<?x?xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x?xf32>
    %a = math.absf %v : f32
    %d = arith.addf %a, %one : f32
    memref.store %d, %t[%i, %j] : memref<?x?xf32>
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x?xf32>
    %d = memref.load %t[%i, %j] : memref<?x?xf32>
    %th = math.tanh %v : f32
    %q = arith.divf %th, %d : f32
    memref.store %q, %y[%i, %j] : memref<?x?xf32>
  }
  memref.dealloc %t : memref<?x?xf32>
  return
}
