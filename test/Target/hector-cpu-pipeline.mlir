// hector-cpu-pipeline: hectorc's CPU lowering as a registered pipeline with
// typed options. It is the pass sequence hectorc runs (the module it leaves
// is hectorc's --emit=llvm, byte for byte), stops after the stage named by
// stop-after, and takes hectorc's options (training, graph sizes, ...).

// RUN: hector-opt %s --hector-cpu-pipeline > %t.opt.mlir
// RUN: hectorc %s --target=cpu --emit=llvm > %t.hectorc.mlir
// RUN: diff %t.opt.mlir %t.hectorc.mlir
// RUN: FileCheck %s --input-file=%t.opt.mlir
// RUN: hector-opt %s --hector-cpu-pipeline=stop-after=htmpl | FileCheck %s --check-prefix=HTMPL
// RUN: hector-opt %s --hector-cpu-pipeline="training=true save=all stop-after=loops" > %t.train.mlir
// RUN: hectorc %s --emit=loops --training --save=all > %t.train.hectorc.mlir
// RUN: diff %t.train.mlir %t.train.hectorc.mlir
// RUN: FileCheck %s --check-prefix=TRAIN --input-file=%t.train.mlir
// RUN: hector-opt %s --hector-cpu-pipeline="num-nodes=100 num-edges=1000000 num-pairs=100 stop-after=hgraph" > %t.sizes.mlir
// RUN: hectorc %s --graph-sizes=N=100,E=1000000,P=100 > %t.sizes.hectorc.mlir
// RUN: diff %t.sizes.mlir %t.sizes.hectorc.mlir
// RUN: hector-opt %s --hector-cpu-pipeline --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES

// The entry point's C interface, the outlined loops run on the thread pool.
// CHECK-LABEL: llvm.func @rgcn(
// CHECK: llvm.call @hector_cpu_parallel_for
// CHECK-LABEL: llvm.func @_mlir_ciface_rgcn(

// HTMPL-LABEL: func.func @rgcn(
// HTMPL: htmpl.gemm
// HTMPL: htmpl.traversal

// TRAIN-LABEL: func.func @rgcn_fwd(
// TRAIN-SAME: llvm.emit_c_interface
// TRAIN-LABEL: func.func @rgcn_bwd(
// TRAIN-SAME: llvm.emit_c_interface

// PASSES: hgraph-linear-reordering
// PASSES-SAME: differentiable=false
// PASSES: hgraph-compact-materialization
// PASSES: hgraph-to-htmpl
// PASSES: hector-cpu-gemm
// PASSES: hector-cpu-traversal
// PASSES: htmpl-to-loops
// PASSES: hector-prepare-entry-points
// PASSES: hector-cpu-check-allocations
// PASSES: hector-cpu-parallel
// PASSES: finalize-memref-to-llvm
// PASSES-SAME: use-generic-functions=true

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
