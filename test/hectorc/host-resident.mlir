// hectorc --host-resident=<names>: node-wise inputs that stay in pinned,
// mapped host memory. The mark reaches the entry point's hector.arg and the
// manifest; the CUDA kernels read the argument in place (no copy, no write,
// no host access: hector-check-host-resident). Bad names, weights, edge-wise
// values and the CPU target are rejected.

// RUN: rm -rf %t && split-file --leading-lines %s %t
// RUN: hectorc %t/two.mlir --target=cuda --emit=htmpl --host-resident=h,x2 | FileCheck %s --check-prefix=HTMPL
// RUN: hectorc %t/two.mlir --target=cuda --emit=gpu --host-resident=x2 --host-resident=h | FileCheck %s --check-prefix=GPU
// RUN: hectorc %hector_src_root/examples/rgat.mlir --target=cuda --emit=htmpl --training --host-resident=h | FileCheck %s --check-prefix=TRAIN
// RUN: hectorc %hector_src_root/examples/hgt.mlir --target=cuda --emit=gpu --host-resident=h | FileCheck %s --check-prefix=HGT
// Unnamed arguments are called arg<k>, as in the manifest.
// RUN: hectorc %t/unnamed.mlir --target=cuda --emit=htmpl --host-resident=arg1 | FileCheck %s --check-prefix=UNNAMED
// RUN: hectorc %t/manifest.mlir --target=cpu -o %t/libmanifest.so
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/libmanifest.so.json

// Errors of the option.
// RUN: not hectorc %t/two.mlir --target=cuda --emit=htmpl --host-resident=nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not hectorc %t/two.mlir --emit=htmpl --host-resident=h 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not hectorc %t/two.mlir --target=cpu -o %t/libcpu.so --host-resident=h 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not hectorc %t/two.mlir --target=cuda --emit=htmpl --host-resident='h}' 2>&1 | FileCheck %s --check-prefix=BADNAME
// RUN: not hectorc %t/two.mlir --target=cuda --emit=htmpl --host-resident=h, 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not hectorc %t/kinds.mlir --target=cuda --emit=htmpl --host-resident=W 2>&1 | FileCheck %s --check-prefix=WEIGHT
// RUN: not hectorc %t/kinds.mlir --target=cuda --emit=htmpl --host-resident=e 2>&1 | FileCheck %s --check-prefix=EDGE
// The same checks, located, through hector-opt.
// RUN: hector-opt %t/kinds.mlir -hgraph-host-resident=names=W,e,s -verify-diagnostics
// RUN: hector-opt %t/marked.mlir -hgraph-to-htmpl -verify-diagnostics
// RUN: hector-opt %t/uses.mlir -hector-check-host-resident -split-input-file -verify-diagnostics
// RUN: not hectorc %t/copy.mlir --target=cuda --emit=gpu 2>&1 | FileCheck %s --check-prefix=COPY
// RUN: not hectorc %t/written.mlir --target=cpu --emit=llvm 2>&1 | FileCheck %s --check-prefix=WRITTEN

//--- two.mlir
hgraph.func @two(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                 %x2: !hgraph.node<8xf32> {hgraph.name = "x2"},
                 %W: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W"}) -> !hgraph.node<8xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %a = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %s = hgraph.add %a, %x2 : !hgraph.node<8xf32>
  hgraph.return %s : !hgraph.node<8xf32>
}

// HTMPL-LABEL: func.func @two(
// HTMPL-SAME: %{{.*}}: memref<?x8xf32> {hector.arg = {host_resident = true, name = "h", role = "input", shape = ["N", 8]}}
// HTMPL-SAME: %{{.*}}: memref<?x8xf32> {hector.arg = {host_resident = true, name = "x2", role = "input", shape = ["N", 8]}}
// HTMPL-SAME: %{{.*}}: memref<?x8x8xf32> {hector.arg = {name = "W", role = "weight", shape = ["R", 8, 8]}}
// HTMPL-SAME: %{{.*}}: memref<?x8xf32> {hector.arg = {name = "result0", role = "output", shape = ["N", 8]}}

// Only kernels read h and x2; nothing copies them to the device.
// GPU-LABEL: func.func @two(
// GPU-NOT: gpu.memcpy
// GPU: gpu.launch_func
// GPU-NOT: gpu.memcpy
// GPU: return

// Every function that takes h is marked: the forward, the training forward
// and the backward (which reads h for the weight gradients).
// TRAIN-LABEL: func.func @rgat(
// TRAIN-SAME: {hector.arg = {host_resident = true, name = "h", role = "input"
// TRAIN-LABEL: func.func @rgat_fwd(
// TRAIN-SAME: {hector.arg = {host_resident = true, name = "h", role = "input"
// TRAIN-LABEL: func.func @rgat_bwd(
// TRAIN-SAME: {hector.arg = {host_resident = true, name = "h", role = "input"
// TRAIN-NOT: host_resident = true, name = "d_h"

// HGT reads h in four GEMMs and the residual, all inside kernels.
// HGT-LABEL: func.func @hgt(
// HGT-SAME: host_resident = true, name = "h"
// HGT-NOT: gpu.memcpy
// HGT: return

//--- unnamed.mlir
hgraph.func @unnamed(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> {
  %e = hgraph.exp %h : !hgraph.node<4xf32>
  hgraph.return %e : !hgraph.node<4xf32>
}
// UNNAMED: {hector.arg = {host_resident = true, name = "arg1", role = "input", shape = ["N", 4]}}

//--- manifest.mlir
// A hand-lowered entry point: host_resident in hector.arg reaches the
// manifest (only where set).
func.func @scale(%x: memref<?x4xf32> {hector.arg = {role = "input", name = "x", shape = ["N", 4], host_resident = true}},
                 %out: memref<?x4xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 4]}}) {
  return
}
// MANIFEST: "name": "x",
// MANIFEST: "sizes": [
// MANIFEST: ],
// MANIFEST-NEXT: "host_resident": true
// MANIFEST: "name": "out",
// MANIFEST: "sizes": [
// MANIFEST-NOT: host_resident

// UNKNOWN: error: hgraph-host-resident: no argument named 'nope' (node-wise inputs: h, x2)
// CPU: hectorc: error: --host-resident needs --target=cuda (in a CPU library every buffer is host memory already)
// BADNAME: hectorc: error: --host-resident: 'h}' is not an argument name
// EMPTY: hectorc: error: --host-resident: '' is not an argument name
// WEIGHT: kinds.mlir:[[# @LINE + 6]]:{{[0-9]+}}: error: hgraph-host-resident: argument 'W' of @kinds is a weight: only node-wise inputs (node features) can stay in host memory
// EDGE: kinds.mlir:[[# @LINE + 7]]:{{[0-9]+}}: error: hgraph-host-resident: argument 'e' of @kinds is edge-wise: only node-wise inputs (node features) can stay in host memory

//--- kinds.mlir
hgraph.func @kinds(%g: !hgraph.graph,
                   // expected-error @+1 {{argument 'W' of @kinds is a weight}}
                   %W: !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W"},
                   // expected-error @+1 {{argument 'e' of @kinds is edge-wise}}
                   %e: !hgraph.edge<4xf32> {hgraph.name = "e"},
                   // expected-error @+1 {{argument 's' of @kinds has role 'saved': only inputs the caller provides can stay in host memory}}
                   %s: !hgraph.node<4xf32> {hgraph.name = "s", hgraph.role = "saved"}) -> !hgraph.node<4xf32> {
  %a = hgraph.aggregate sum %e : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %b = hgraph.add %a, %s : !hgraph.node<4xf32>
  hgraph.return %b : !hgraph.node<4xf32>
}

//--- marked.mlir
// The lowering checks a hand-written mark too.
hgraph.func @marked(%g: !hgraph.graph,
                    // expected-error @+1 {{hgraph-to-htmpl: argument 'W' is marked 'hgraph.host_resident' but is not a node-wise input}}
                    %W: !hgraph.weight<single, 4x4xf32> {hgraph.name = "W", hgraph.host_resident},
                    %h: !hgraph.node<4xf32> {hgraph.name = "h"}) -> !hgraph.node<4xf32> {
  %y = hgraph.typed_linear %W, %h from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %y : !hgraph.node<4xf32>
}

//--- uses.mlir
// Kernels may read a host-resident argument; nothing else may touch it.
func.func @read_in_kernel(%x: memref<?xf32> {hector.arg = {name = "x", host_resident = true}},
                          %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.subview %x[%bx] [1] [1] : memref<?xf32> to memref<1xf32, strided<[1], offset: ?>>
    %a = memref.load %v[%c0] : memref<1xf32, strided<[1], offset: ?>>
    memref.store %a, %out[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @copied(%x: memref<?xf32> {hector.arg = {name = "x", host_resident = true}},
                  %out: memref<?xf32>) {
  // expected-error @+1 {{host-resident argument 'x' is read by host code here (a copy to the device or a host loop); host-resident inputs are only read in place by GPU kernels}}
  memref.copy %x, %out : memref<?xf32> to memref<?xf32>
  return
}

// -----

func.func @written(%x: memref<?xf32> {hector.arg = {name = "x", host_resident = true}}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{host-resident argument 'x' is written here; host-resident inputs are read-only}}
    memref.store %f, %x[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

func.func private @external(memref<?xf32>)

func.func @called(%x: memref<?xf32> {hector.arg = {host_resident = true}}) {
  // expected-error @+1 {{host-resident argument 'arg0' is passed to 'func.call', which may copy or write it}}
  func.call @external(%x) : (memref<?xf32>) -> ()
  return
}

//--- copy.mlir
// A host-side copy would become a staging copy (gpu.memcpy) to the device.
func.func @copy(%x: memref<?x4xf32> {hector.arg = {role = "input", name = "x", shape = ["N", 4], host_resident = true}},
                %out: memref<?x4xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 4]}}) {
  memref.copy %x, %out : memref<?x4xf32> to memref<?x4xf32>
  return
}
// COPY: copy.mlir:[[# @LINE - 3]]:3: error: host-resident argument 'x' is read by host code here

//--- written.mlir
// Only inputs may be host-resident.
func.func @written(%x: memref<?xf32> {hector.arg = {role = "output", name = "x", host_resident = true}}) {
  return
}
// WRITTEN: written.mlir:[[# @LINE - 3]]:1: error: entry point 'written' argument 'x' is host_resident, which only an input the entry point does not write may be
