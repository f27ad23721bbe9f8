// REQUIRES: ptxas
// Constants and sizes stay inside the kernels: gpu-launch-sink-index-
// computations runs before outlining, so loop bounds, tile sizes and float
// constants are compile-time constants of the kernel (unrollable loops,
// immediate offsets) rather than kernel parameters. The GEMM kernels of
// RGCN take its buffers and nothing else; their shared tiles are 16-byte
// aligned (hector-align-workgroup-memory).

// RUN: hectorc %hector_src_root/examples/rgcn.mlir --target=cuda --emit=gpu | FileCheck %s
// RUN: hectorc %hector_src_root/examples/rgcn.mlir --target=cuda --emit=ptx | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: gpu.module @rgcn_kernel
// CHECK: gpu.func @rgcn_kernel({{(%arg[0-9]+: memref<[?x0-9]+xi32>, )*(%arg[0-9]+: memref<[?x0-9]+xf32>, )*}}%arg{{[0-9]+}}: memref<?x64xf32>) workgroup(%{{.*}} : memref<2x64x36xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<2x32x68xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK-DAG: arith.constant 64 : index
// CHECK-DAG: arith.constant 0.000000e+00 : f32
// CHECK: gpu.return

// A kernel parameter list without 64-bit scalars: only pointers and the
// descriptors' sizes and strides of the buffers.
// PTX-LABEL: .visible .entry rgcn_kernel(
// PTX-NOT: .param .f32
// PTX: .shared .align 16
