// RUN: hector-opt %s --split-input-file --hector-kernel-occupancy | FileCheck %s

// A kernel gets the largest request among its ops as nvvm.minctasm and the
// requests are removed; kernels without requests and non-kernel functions
// are left as they are.

// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @gemm() kernel attributes {nvvm.minctasm = 4 : i32}
// CHECK-NOT: hector.min_blocks_per_sm
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: gpu.func @plain() kernel {
// CHECK-NOT: nvvm.minctasm
// CHECK: gpu.func @helper() {
// CHECK-NEXT: gpu.barrier{{$}}
gpu.module @kernels {
  gpu.func @gemm() kernel {
    gpu.barrier {hector.min_blocks_per_sm = 3 : i64}
    gpu.barrier {hector.min_blocks_per_sm = 4 : i64}
    gpu.return
  }
  gpu.func @plain() kernel {
    gpu.barrier
    gpu.return
  }
  gpu.func @helper() {
    gpu.barrier {hector.min_blocks_per_sm = 2 : i64}
    gpu.return
  }
}
