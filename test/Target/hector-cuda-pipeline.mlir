// REQUIRES: ptxas
// hector-cuda-pipeline: hectorc's CUDA lowering as a registered pipeline with
// typed options. It is the pass sequence hectorc runs (the module it leaves
// at the GPU stage is hectorc's --emit=gpu, byte for byte, with the GPU
// options too); the kernels are built with the toolkit the `toolkit` option
// names (gpu-module-to-binary's), where hectorc passes --cuda-path.

// RUN: hector-opt %s --hector-cuda-pipeline=stop-after=gpu > %t.opt.mlir
// RUN: hectorc %s --target=cuda --emit=gpu > %t.hectorc.mlir
// RUN: diff %t.opt.mlir %t.hectorc.mlir
// RUN: FileCheck %s --input-file=%t.opt.mlir
// RUN: hector-opt %s --hector-cuda-pipeline="stop-after=gpu host-resident=h gpu-block-size=128 traversal-lanes=8 precision=tf32" > %t.options.mlir
// RUN: hectorc %s --target=cuda --emit=gpu --host-resident=h --gpu-block-size=128 --traversal-lanes=8 --precision=tf32 > %t.options.hectorc.mlir
// RUN: diff %t.options.mlir %t.options.hectorc.mlir
// RUN: hector-opt %s --hector-cuda-pipeline="stop-after=gpu gemm-staging=registers gemm-blocks-per-sm=3" > %t.gemm.mlir
// RUN: hectorc %s --target=cuda --emit=gpu --gemm-staging=registers --gemm-blocks-per-sm=3 > %t.gemm.hectorc.mlir
// RUN: diff %t.gemm.mlir %t.gemm.hectorc.mlir
// RUN: hector-opt %s --hector-cuda-pipeline="gpu-format=isa gpu-arch=sm_80" | FileCheck %s --check-prefix=PTX
// RUN: hector-opt %s --hector-cuda-pipeline="toolkit=/opt/cuda-x opt-level=3" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES

// CHECK-LABEL: func.func @rgcn(
// CHECK-SAME: llvm.emit_c_interface
// CHECK: gpu.launch_func async
// CHECK-LABEL: gpu.module @

// The host code in the LLVM dialect, the kernels embedded as PTX for the
// chip asked for.
// PTX: llvm.func @_mlir_ciface_rgcn(
// PTX: gpu.binary @{{.*}} [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">, {{.*}}assembly = "//

// PASSES: htmpl-to-gpu
// PASSES: htmpl-to-loops
// PASSES: hector-prepare-entry-points
// PASSES: hector-map-parallel-loops{block-size=256}
// PASSES: hector-host-memory-to-gpu
// PASSES: hector-align-workgroup-memory
// PASSES-NEXT: hector-kernel-occupancy
// PASSES: nvvm-attach-target{O=3 chip=sm_90
// PASSES-SAME: features=+ptx80
// PASSES: gpu-module-to-binary{format=fatbin
// PASSES-SAME: toolkit=/opt/cuda-x}

hgraph.func @rgcn(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W"},
                  %W0: !hgraph.weight<single, 8x8xf32> {hgraph.name = "W0"}) -> !hgraph.node<8xf32> {
  %msg = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %norm = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>
  %scaled = hgraph.scale %norm, %msg : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %agg = hgraph.aggregate sum %scaled : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %self = hgraph.typed_linear %W0, %h from node : !hgraph.weight<single, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  %out = hgraph.add %self, %agg : !hgraph.node<8xf32>
  hgraph.return %out : !hgraph.node<8xf32>
}
