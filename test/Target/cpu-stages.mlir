// The CPU backend's stages on hand-written entry points over memrefs (what
// hgraph-to-htmpl + htmpl-to-loops produce): the loops stage leaves them as
// they are; in the llvm stage the outermost parallel loops are outlined and
// called through the library's thread pool (hector_cpu_parallel_for) and
// heap memory comes from the CPU runtime; llvmir has every function once per
// x86-64 level behind dispatching entry points, the CPU runtime linked in,
// and calls nothing but libc/libm (llvm.tanh becomes tanhf).

// RUN: hectorc %s --emit=loops | FileCheck %s --check-prefix=LOOPS
// RUN: hectorc %s --target=cpu --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: hectorc %s --target=cpu --emit=llvmir | FileCheck %s --check-prefix=IR
// RUN: hectorc %s --target=cpu --emit=llvmir --opt-level=0 | FileCheck %s --check-prefix=IR0
// RUN: hectorc %s --target=cpu --cpu=x86-64-v3 --emit=llvmir | FileCheck %s --check-prefix=ONE

// LOOPS-LABEL: func.func @gather_scale_scatter(
// LOOPS-SAME: hector.arg = {name = "edge_src", role = "graph", shape = ["E"]}
// LOOPS: scf.parallel
// LOOPS: memref.atomic_rmw addf
// LOOPS-LABEL: func.func @softsign_tanh(
// LOOPS: memref.alloc
// LOOPS: math.tanh
// LOOPS: memref.dealloc

// The loop bodies are outlined (internal), the entry points call the pool.
// LLVM-LABEL: llvm.func internal @gather_scale_scatter_parallel(
// LLVM-SAME: %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr)
// LLVM: llvm.atomicrmw fadd
// LLVM-LABEL: llvm.func @gather_scale_scatter(
// LLVM-NOT: scf.parallel
// LLVM: llvm.call @hector_cpu_parallel_for(
// LLVM-LABEL: llvm.func @_mlir_ciface_gather_scale_scatter(
// LLVM-LABEL: llvm.func internal @softsign_tanh_parallel_0(
// LLVM: llvm.intr.tanh
// LLVM-LABEL: llvm.func @softsign_tanh(
// LLVM: llvm.call @_mlir_memref_to_llvm_alloc
// LLVM: llvm.call @hector_cpu_parallel_for(
// LLVM: llvm.call @hector_cpu_parallel_for(
// LLVM: llvm.call @_mlir_memref_to_llvm_free
// LLVM-LABEL: llvm.func @_mlir_ciface_softsign_tanh(

// IR-LABEL: define internal void @gather_scale_scatter_parallel(i64
// IR: atomicrmw fadd
// IR-LABEL: define internal fastcc void @gather_scale_scatter.x86-64(
// IR: call void @hector_cpu_parallel_for(ptr nonnull @gather_scale_scatter_parallel,
// IR: declare float @llvm.tanh.f32(
// IR-LABEL: define internal fastcc void @gather_scale_scatter.x86-64-v3(
// IR-LABEL: define internal fastcc void @gather_scale_scatter.x86-64-v4(
// The exported entry points pick a version by hector_cpu_level().
// IR-LABEL: define void @_mlir_ciface_gather_scale_scatter(ptr
// IR: call i32 @hector_cpu_level()
// IR: call fastcc void @_mlir_ciface_gather_scale_scatter.x86-64-v4(
// IR: call fastcc void @_mlir_ciface_gather_scale_scatter.x86-64-v3(
// IR: call fastcc void @_mlir_ciface_gather_scale_scatter.x86-64(
// IR-LABEL: define void @_mlir_ciface_softsign_tanh(ptr
// The CPU runtime, hidden (not exported).
// IR-DAG: define hidden void @hector_cpu_parallel_for(
// IR-DAG: define hidden {{.*}}i32 @hector_cpu_level()
// IR-DAG: define hidden ptr @_mlir_memref_to_llvm_alloc(
// IR-DAG: define hidden void @_mlir_memref_to_llvm_free(
// IR-DAG: attributes #{{[0-9]+}} = { {{.*}}"target-cpu"="x86-64-v3"
// IR-DAG: attributes #{{[0-9]+}} = { {{.*}}"target-cpu"="x86-64-v4"
// IR-NOT: mgpu

// IR0-LABEL: define internal void @gather_scale_scatter.x86-64(
// IR0-LABEL: define void @_mlir_ciface_gather_scale_scatter(ptr

// One named CPU: one version, no dispatch.
// ONE-LABEL: define void @_mlir_ciface_gather_scale_scatter(ptr
// ONE-NOT: hector_cpu_level
// ONE: attributes #{{[0-9]+}} = { {{.*}}"target-cpu"="x86-64-v3"

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
