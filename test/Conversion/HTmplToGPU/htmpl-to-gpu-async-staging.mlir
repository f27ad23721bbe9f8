// RUN: hector-opt %s --htmpl-to-gpu --canonicalize --cse | FileCheck %s
// RUN: hector-opt %s --htmpl-to-gpu="gemm-blocks-per-sm=3" | FileCheck %s --check-prefix=BLOCKS
// RUN: hector-opt %s --htmpl-to-gpu="gemm-blocks-per-sm=0" | FileCheck %s --check-prefix=NO-REQUEST
// RUN: hector-opt %s --htmpl-to-gpu="gemm-staging=registers" | FileCheck %s --check-prefix=REGS
// RUN: hector-opt %s --htmpl-to-gpu="precision=tf32" | FileCheck %s --check-prefix=REGS
// RUN: not hector-opt %s --htmpl-to-gpu="gemm-staging=shared" 2>&1 | FileCheck %s --check-prefix=BAD-STAGING
// RUN: not hector-opt %s --htmpl-to-gpu="gemm-blocks-per-sm=-1" 2>&1 | FileCheck %s --check-prefix=BAD-BLOCKS

// The fp32 vector kernel of a row-mode GEMM stages its tiles with
// asynchronous copies into two buffers: the first k-tile's group before the
// k loop, then in each iteration the next tile's group into the other
// buffer, a wait that leaves only that group pending (the last iteration
// waits for all), a barrier, the product on the current buffer, a barrier.
// Gathered rows bypass L1; rows outside the segment piece and depths past K
// copy no source element (zero-fill).

// CHECK-LABEL: func.func @gemm
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[A:.*]] : memref<2x64x36xf32, #gpu.address_space<workgroup>>, %[[B:.*]] : memref<2x32x68xf32, #gpu.address_space<workgroup>>)
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}], %[[A]][%c0, %{{.*}}, %{{.*}}], 4, %{{.*}} {bypassL1} : memref<?x64xf32> to memref<2x64x36xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %[[B]][%c0, %{{.*}}, %{{.*}}], 4, %{{.*}} : memref<?x64x64xf32> to memref<2x32x68xf32, #gpu.address_space<workgroup>>
// CHECK: %[[FIRST:.*]] = nvgpu.device_async_create_group
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[PENDING:.*]] = %[[FIRST]]) -> ({{.*}}!nvgpu.device.async.token)
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// CHECK: %[[NEXT:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %[[PENDING]] {numGroups = 1 : i32}
// CHECK: scf.yield %[[NEXT]]
// CHECK: } else {
// CHECK: nvgpu.device_async_wait %[[PENDING]] {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK: memref.subview %[[A]]
// CHECK: vector.fma
// CHECK: gpu.barrier {hector.min_blocks_per_sm = 4 : i64}
// CHECK: return

// The barrier after the product carries the occupancy request (4 by
// default, above).
// BLOCKS-LABEL: func.func @gemm
// BLOCKS: gpu.barrier {hector.min_blocks_per_sm = 3 : i64}

// NO-REQUEST-LABEL: func.func @gemm
// NO-REQUEST: nvgpu.device_async_copy
// NO-REQUEST-NOT: hector.min_blocks_per_sm

// REGS-LABEL: func.func @gemm
// REGS-NOT: nvgpu.device_async_copy
// REGS: return

// BAD-STAGING: htmpl-to-gpu: gemm-staging must be async or registers, got 'shared'
// BAD-BLOCKS: htmpl-to-gpu: gemm-blocks-per-sm must be 0 to 32, got -1
func.func @gemm(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
  return
}
