// Entry kinds and primal functions reach the manifest: hgraph.kind /
// hgraph.primal on an hgraph.func (lowered by hgraph-to-htmpl), or
// hector.kind / hector.primal on a func.func entry point, which must be well
// formed.

// RUN: rm -rf %t && split-file --leading-lines %s %t
// RUN: hectorc %t/training.mlir --target=cpu -o %t/libtraining.so
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/libtraining.so.json
// RUN: not hectorc %t/kind.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not hectorc %t/primal.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=PRIMAL

// MANIFEST: "name": "f",
// MANIFEST: "kind": "inference",
// MANIFEST-NEXT: "primal": "f",
// MANIFEST: "name": "f_bwd",
// MANIFEST: "kind": "training_backward",
// MANIFEST-NEXT: "primal": "f",
// MANIFEST: "role": "grad_output",
// MANIFEST-NEXT: "name": "d_result0",
// MANIFEST: "role": "grad",
// MANIFEST-NEXT: "name": "d_W",
// MANIFEST-NEXT: "dtype": "float32",
// MANIFEST-NEXT: "rank": 3,
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: "R",
// MANIFEST-NEXT: 4,
// MANIFEST-NEXT: 2
//--- training.mlir
hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
               %W: !hgraph.weight<edge, 4x2xf32> {hgraph.name = "W"}) -> !hgraph.edge<2xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 4x2xf32>, !hgraph.node<4xf32> -> !hgraph.edge<2xf32>
  hgraph.return %z : !hgraph.edge<2xf32>
}
hgraph.func @f_bwd(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
                   %dz: !hgraph.edge<2xf32> {hgraph.name = "d_result0", hgraph.role = "grad_output"})
    -> (!hgraph.weight<edge, 4x2xf32> {hgraph.name = "d_W", hgraph.role = "grad"})
    attributes {hgraph.kind = "training_backward", hgraph.primal = "f"} {
  %dW = hgraph.weight_grad %h from src, %dz : !hgraph.node<4xf32>, !hgraph.edge<2xf32> -> !hgraph.weight<edge, 4x2xf32>
  hgraph.return %dW : !hgraph.weight<edge, 4x2xf32>
}

// KIND: kind.mlir:[[# @LINE + 2]]:1: error: entry point 'f': 'hector.kind' must be "inference", "training_forward" or "training_backward", got "training"
//--- kind.mlir
func.func @f(%x: memref<?xf32>) attributes {hector.kind = "training"} {
  return
}

// PRIMAL: primal.mlir:[[# @LINE + 2]]:1: error: entry point 'f': 'hector.primal' must be a non-empty string, got 3 : i64
//--- primal.mlir
func.func @f(%x: memref<?xf32>) attributes {hector.primal = 3} {
  return
}
