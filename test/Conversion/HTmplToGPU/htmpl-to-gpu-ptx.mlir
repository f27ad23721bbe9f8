// The kernels of htmpl-to-gpu go through the CUDA backend: kernel outlining,
// gpu-lower-to-nvvm-pipeline (sm_90, +ptx80) to PTX, and ptxas (the
// --emit=llvm stage embeds the assembled binary, so ptxas must accept every
// kernel). hectorc takes the launches as an already lowered module.

// RUN: hector-opt %s --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s
// RUN: hector-opt %s --htmpl-to-gpu | hectorc - --target=cuda --emit=llvm | FileCheck %s --check-prefix=BIN
// No atomic is ordered or scoped beyond the device (a float max would be an
// acquire-release compare-and-swap at system scope through memref.atomic_rmw).
// RUN: hector-opt %s --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=SCOPE
// The vector kernel staged through registers instead, and the cp.async
// kernel register-limited for 3 blocks per SM (.minnctapersm; 4 by default).
// RUN: hector-opt %s --htmpl-to-gpu="gemm-staging=registers" | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=REGS
// RUN: hector-opt %s --htmpl-to-gpu="gemm-blocks-per-sm=3" | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=BLOCKS

// The three models, from hgraph to PTX and to an embedded binary.
// RUN: hectorc %hector_src_root/examples/rgcn.mlir --emit=htmpl | hector-opt --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=RGCN
// RUN: hectorc %hector_src_root/examples/rgat.mlir --emit=htmpl | hector-opt --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=RGAT
// RUN: hectorc %hector_src_root/examples/rgat.mlir --fuse-softmax-aggregate --emit=htmpl | hector-opt --htmpl-to-gpu | hectorc - --target=cuda --emit=ptx | FileCheck %s --check-prefix=RGAT-FUSED
// RUN: hectorc %hector_src_root/examples/hgt.mlir --emit=htmpl | hector-opt --htmpl-to-gpu | hectorc - --target=cuda --emit=llvm | FileCheck %s --check-prefix=BIN

// Row-mode GEMM, the vector kernel: two buffers of 16-byte aligned tiles
// (2 x [64][32+4] and 2 x [32][64+4] floats) filled by 16-byte
// asynchronous copies (gathered rows past L1, zero-filled outside the
// data), the next k-tile's copies in flight while the product reads the
// current one with 16-byte accesses, block barriers.
// CHECK-LABEL: // gpu.module @gemm_kernel
// CHECK: .target sm_90
// CHECK: .minnctapersm 4
// CHECK: .shared .align 16 .b8 __wg_gemm_kernel_0[18432];
// CHECK: .shared .align 16 .b8 __wg_gemm_kernel_1[17408];
// CHECK-DAG: cp.async.cg.shared.global [%{{.*}}], [%{{.*}}], 16, %r{{[0-9]+}};
// CHECK-DAG: cp.async.ca.shared.global
// CHECK-DAG: cp.async.commit_group
// CHECK-DAG: cp.async.wait_group 1
// CHECK-DAG: cp.async.wait_group 0
// CHECK-DAG: bar.sync 0
// CHECK-DAG: ld.shared.v4.b32
// CHECK-DAG: fma.rn.f32
// CHECK-DAG: st.global.v4.b32
// The general kernel, for operands that do not start 16-byte aligned.
// CHECK-LABEL: // gpu.module @gemm_kernel_0
// CHECK: .shared .align 16 .b8 __wg_gemm_kernel_0[16640];
// CHECK: bar.sync 0
// CHECK: fma.rn.f32
// CHECK: st.global.b32
// Weight gradient: a clearing kernel, then partial tiles added atomically.
// CHECK-LABEL: // gpu.module @weight_gradient_kernel
// CHECK: st.global.b32
// CHECK-LABEL: // gpu.module @weight_gradient_kernel_{{[0-9]+}}
// CHECK: bar.sync 0
// CHECK: atom.global.add.f32
// Warp traversal, 16-byte variant (rows start 16-byte aligned): each lane
// reads its 4 features of a row with one 128-bit load and updates them in
// the shared row with 128-bit accesses.
// CHECK-LABEL: .visible .entry attention_kernel(
// CHECK-DAG: ld.global.v4.b32
// CHECK-DAG: ld.shared.v4.b32
// CHECK-DAG: st.shared.v4.b32
// CHECK-DAG: shfl.sync.bfly.b32
// Warp traversal, general kernel: butterfly reduction, warp barriers
// around the warp-private shared row (plain updates: each lane owns its
// elements), global atomics on flush.
// CHECK-LABEL: .visible .entry attention_kernel(
// CHECK-NOT: .v4.
// CHECK-DAG: shfl.sync.bfly.b32
// CHECK-DAG: bar.warp.sync
// CHECK-DAG: ld.shared.b32
// CHECK-DAG: st.shared.b32
// CHECK-DAG: atom.global.add.f32
// Lanes sharing an element of the row: shared atomics, which would keep a
// lane's loads apart, so no 16-byte variant.
// CHECK-LABEL: .visible .entry sum_features_kernel(
// CHECK-NOT: .v4.
// CHECK: atom.shared.add.f32
// CHECK-NOT: .visible .entry sum_features_kernel(
// Thread traversal: segmented scan over shuffles.
// CHECK-LABEL: .visible .entry degrees_kernel(
// CHECK-DAG: shfl.sync.up.b32
// CHECK-DAG: shfl.sync.down.b32
// CHECK-DAG: atom.global.add.u32
// CSR traversal with a max accumulation: plain maxima in the shared row,
// a relaxed device-scope compare-and-swap loop on flush.
// CHECK-LABEL: .visible .entry csr_max_kernel(
// CHECK: bar.warp.sync
// CHECK: max.NaN.f32
// CHECK: atom.relaxed.gpu.cas.b32

// REGS-LABEL: // gpu.module @gemm_kernel
// REGS: .shared .align 16 .b8 __wg_gemm_kernel_0[9216];
// REGS: .shared .align 16 .b8 __wg_gemm_kernel_1[8704];
// REGS-NOT: cp.async
// REGS-DAG: ld.global.v4.b32
// REGS-DAG: st.shared.v4.b32
// REGS-DAG: ld.shared.v4.b32
// REGS-LABEL: // gpu.module @gemm_kernel_0

// BLOCKS-LABEL: // gpu.module @gemm_kernel
// BLOCKS: .maxntid 256, 1, 1
// BLOCKS-NEXT: .minnctapersm 3
// BLOCKS: cp.async.cg.shared.global
// The general kernel makes no request.
// BLOCKS-LABEL: // gpu.module @gemm_kernel_0
// BLOCKS-NOT: .minnctapersm
// BLOCKS-LABEL: // gpu.module @weight_gradient_kernel

// SCOPE-NOT: .sys
// SCOPE-NOT: acq_rel

// BIN: gpu.binary

// RGCN-COUNT-8: .visible .entry
// RGCN-NOT: .visible .entry
// In RGAT the pair GEMM computes the source score in its epilogue, whose
// atomic sums need the score buffer cleared first: one kernel more.
// RGAT-COUNT-11: .visible .entry
// RGAT-NOT: .visible .entry
// With --fuse-softmax-aggregate the softmax and the aggregation are one
// htmpl.softmax_aggregate (two kernels: 16-byte rows and general) instead
// of the reduction walk, the alpha pass, the output's fill and the
// aggregation's two kernels.
// RGAT-FUSED-COUNT-8: .visible .entry
// RGAT-FUSED-NOT: .visible .entry

func.func @gemm(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
                %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>,
                %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>)
  return
}

func.func @weight_gradient(%lhs: memref<?x64xf32>, %rhs: memref<?x32xf32>,
                           %out: memref<?x2x32x16xf32>, %seg: memref<?xi32>,
                           %s: memref<?x2xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<?x32xf32>)
             out(%out : memref<?x2x32x16xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?x2xf32>) {transpose_lhs}
  return
}

func.func @attention(%src: memref<?xi32>, %dst: memref<?xi32>,
                     %ety: memref<?xi32>, %z: memref<?x64xf32>,
                     %a: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge, %a : memref<?x64xf32> as etype)
      outs(%out : memref<?x64xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ra: index, %ro: index):
    %d = scf.for %f = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %z[%rz, %f] : memref<?x64xf32>
      %y = memref.load %a[%ra, %f] : memref<?x64xf32>
      %p = arith.mulf %x, %y : f32
      %q = arith.addf %acc, %p : f32
      scf.yield %q : f32
    }
    %w = math.exp %d : f32
    scf.for %f = %c0 to %c64 step %c1 {
      %x = memref.load %z[%rz, %f] : memref<?x64xf32>
      %p = arith.mulf %w, %x : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, memref<?x64xf32>
    }
  }
  return
}

func.func @sum_features(%src: memref<?xi32>, %dst: memref<?xi32>,
                        %ety: memref<?xi32>, %z: memref<?x64xf32>,
                        %out: memref<?x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x64xf32> as edge) outs(%out : memref<?x2xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ro: index):
    scf.for %f = %c0 to %c64 step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x64xf32>
      htmpl.accumulate add %v, %out[%ro, %c1] : f32, memref<?x2xf32>
    }
  }
  return
}

func.func @degrees(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
                   %deg: memref<?xi32>) {
  %one = arith.constant 1 : i32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%deg : memref<?xi32> as dst) {
  ^bb0(%e: index, %rd: index):
    htmpl.accumulate add %one, %deg[%rd] : i32, memref<?xi32>
  }
  return
}

func.func @csr_max(%rp: memref<?xi32>, %csrc: memref<?xi32>, %eid: memref<?xi32>,
                   %cety: memref<?xi32>, %x: memref<?x33xf32>,
                   %m: memref<?x33xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c33 = arith.constant 33 : index
  htmpl.traversal edges csr(%rp, %csrc, %eid, %cety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x33xf32> as src) outs(%m : memref<?x33xf32> as dst) {
  ^bb0(%e: index, %rx: index, %rm: index):
    scf.for %f = %c0 to %c33 step %c1 {
      %v = memref.load %x[%rx, %f] : memref<?x33xf32>
      htmpl.accumulate max %v, %m[%rm, %f] : f32, memref<?x33xf32>
    }
  }
  return
}
