// REQUIRES: ptxas
// The CUDA backend's stages. A flat parallel loop becomes a 1-D grid of
// --gpu-block-size threads (last dimension fastest); a blocks x threads nest,
// as htmpl-to-loops shapes it, keeps its shape; host temporaries become
// device allocations; kernels are outlined, compiled to PTX and embedded.

// RUN: hectorc %s --target=cuda --emit=gpu | FileCheck %s --check-prefix=GPU
// RUN: hectorc %s --target=cuda --emit=gpu --gpu-block-size=128 | FileCheck %s --check-prefix=B128
// RUN: hectorc %s --target=cuda --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: hectorc %s --target=cuda --emit=ptx --gpu-arch=sm_80 --gpu-features=+ptx70 | FileCheck %s --check-prefix=SM80
// RUN: hectorc %s --target=cuda --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: hectorc %s --target=cuda --emit=llvmir | FileCheck %s --check-prefix=IR

// GPU-LABEL: func.func @scale_exp(
// GPU: %[[T:.*]], %{{.*}} = gpu.alloc async
// GPU: gpu.launch_func async {{.*}} @scale_exp_kernel::@scale_exp_kernel blocks in (%{{.*}}, %c1, %c1) threads in (%c256, %c1, %c1)
// GPU: gpu.launch_func async {{.*}} threads in (%c256, %c1, %c1)
// GPU: gpu.dealloc async {{.*}} %[[T]]
// GPU: gpu.wait [
// GPU-LABEL: gpu.module @scale_exp_kernel
// GPU: gpu.func @scale_exp_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// GPU: gpu.block_id x
// GPU: gpu.thread_id x
// GPU: arith.remsi
// GPU: math.exp
// GPU-LABEL: func.func @rows_by_columns(
// GPU: gpu.launch_func {{.*}} threads in (%c4, %c1, %c1)

// B128-LABEL: func.func @scale_exp(
// B128: threads in (%c128, %c1, %c1)

// PTX: // gpu.module @scale_exp_kernel
// PTX: .target sm_90
// PTX: .visible .entry scale_exp_kernel(
// PTX: .visible .entry rows_by_columns_kernel(

// SM80: .target sm_80

// LLVM-NOT: gpu.func
// LLVM-LABEL: llvm.func @_mlir_ciface_scale_exp(
// LLVM: gpu.binary @scale_exp_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">

// IR-DAG: call ptr @mgpuStreamCreate()
// IR-DAG: call ptr @mgpuMemAlloc(
// IR-DAG: call ptr @mgpuModuleGetFunction(
// IR-DAG: call void @mgpuLaunchKernel(
// IR-DAG: call void @mgpuStreamSynchronize(
// IR-DAG: call void @mgpuStreamDestroy(
// IR-DAG: call ptr @mgpuModuleLoad(ptr nonnull @scale_exp_kernel_binary, i64
// IR-DAG: define void @_mlir_ciface_scale_exp(ptr
// IR-DAG: define void @_mlir_ciface_rows_by_columns(ptr

// y = 2 * exp(x), through a temporary.
func.func @scale_exp(%x: memref<?x?xf32>, %y: memref<?x?xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  %t = memref.alloc(%n, %m) : memref<?x?xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x?xf32>
    %e = math.exp %v : f32
    memref.store %e, %t[%i, %j] : memref<?x?xf32>
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %v = memref.load %t[%i, %j] : memref<?x?xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %y[%i, %j] : memref<?x?xf32>
  }
  memref.dealloc %t : memref<?x?xf32>
  return
}

// A block per row, a thread per column (htmpl-to-loops' GEMM shape).
func.func @rows_by_columns(%x: memref<?x4xf32>, %y: memref<?x4xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      %v = memref.load %x[%i, %j] : memref<?x4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %y[%i, %j] : memref<?x4xf32>
    }
  }
  return
}
