// RUN: hector-opt %s -split-input-file -hgraph-to-htmpl | FileCheck %s

// An offload plan lowers to the runtime's calls (hector/offload.h). The
// forward computes the saved value into a temporary, hands its rows to
// hector_offload_evict once the last traversal that reads them has run, and
// frees it; the backward allocates the rows (P of them: compact), fills them
// with hector_offload_prefetch and frees them after their last reader.
// Neither signature has a buffer for the stored value: the manifest lists
// it under hector.offload.

// CHECK-LABEL: func.func private @hector_offload_wait(i64)
// CHECK-LABEL: func.func private @hector_offload_prefetch(i64, !llvm.ptr, i64)
// CHECK-LABEL: func.func private @hector_offload_evict(i64, i32, !llvm.ptr, i64)

// CHECK-LABEL: func.func @f_fwd(
// CHECK-NOT: name = "saved0", role
// CHECK-SAME: {hector.arg = {name = "result0", role = "output", shape = ["N", 8]}})
// CHECK-SAME: hector.offload = [{direction = "evict", name = "saved0", shape = ["P", 8], slot = 0 : i64, tier = "disk"}]
// CHECK: %[[Z:.*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>
// CHECK: htmpl.gemm {{.*}} out(%[[Z]] : memref<?x8xf32>)
// CHECK: htmpl.traversal edges {{.*}} ins(%[[Z]] : memref<?x8xf32> as compact)
// CHECK: %[[ROWS:.*]] = memref.dim %[[Z]], %{{.*}} : memref<?x8xf32>
// CHECK: %[[BYTES:.*]] = arith.muli %[[ROWS]], %c32 : index
// CHECK: %[[ADDRESS:.*]] = memref.extract_aligned_pointer_as_index %[[Z]]
// CHECK-DAG: %[[SLOT:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[DISK:.*]] = arith.constant 1 : i32
// CHECK: %[[ADDRESS64:.*]] = arith.index_cast %[[ADDRESS]] : index to i64
// CHECK: %[[POINTER:.*]] = llvm.inttoptr %[[ADDRESS64]] : i64 to !llvm.ptr
// CHECK: %[[BYTES64:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK: call @hector_offload_evict(%[[SLOT]], %[[DISK]], %[[POINTER]], %[[BYTES64]])
// CHECK-NEXT: memref.dealloc %[[Z]]
// CHECK-NEXT: return

// CHECK-LABEL: func.func @f_bwd(
// CHECK-NOT: name = "saved0", role
// CHECK-SAME: hector.offload = [{direction = "prefetch", name = "saved0", shape = ["P", 8], slot = 0 : i64}]
// CHECK: %[[PAIRS:.*]] = memref.dim %arg4
// CHECK: %[[P:.*]] = memref.alloc(%[[PAIRS]]) : memref<?x8xf32>
// CHECK: call @hector_offload_prefetch(%[[PSLOT:.*]], %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, i64) -> ()
// The copy may still be running (on a GPU copy stream): its first reader
// waits for it.
// CHECK: %[[WSLOT:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @hector_offload_wait(%[[WSLOT]]) : (i64) -> ()
// CHECK: htmpl.traversal edges {{.*}} ins(%{{.*}} : memref<?x8xf32> as dst, %[[P]] : memref<?x8xf32> as compact)
// CHECK: memref.dealloc %[[P]]
// CHECK-NEXT: %[[Y:.*]] = memref.alloc
// CHECK: return
hgraph.func @f_fwd(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"}, %W: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W"}) -> (!hgraph.node<8xf32> {hgraph.name = "result0", hgraph.role = "output"}, !hgraph.stored<!hgraph.edge<8xf32>> {hgraph.name = "saved0", hgraph.role = "saved", hgraph.materialization = #hgraph.materialization<compact>}) attributes {hgraph.kind = "training_forward", hgraph.primal = "f"} {
  %z = hgraph.typed_linear %W, %h from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %r = hgraph.relu %z : !hgraph.edge<8xf32>
  %o = hgraph.aggregate sum %r : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %s = hgraph.evict %z to disk slot 0 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  hgraph.return %o, %s : !hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>
}
hgraph.func @f_bwd(%g: !hgraph.graph, %s: !hgraph.stored<!hgraph.edge<8xf32>> {hgraph.name = "saved0", hgraph.role = "saved", hgraph.materialization = #hgraph.materialization<compact>}, %d: !hgraph.node<8xf32> {hgraph.name = "d_result0", hgraph.role = "grad_output"}) -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"}) attributes {hgraph.kind = "training_backward", hgraph.primal = "f"} {
  %z = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.edge<8xf32>
  %e = hgraph.gather %d from dst : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %m = hgraph.leaky_relu_grad %e, %z alpha 0.0 : !hgraph.edge<8xf32>
  %x = hgraph.aggregate sum %m to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %y = hgraph.aggregate sum %e to src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %t = hgraph.add %x, %y : !hgraph.node<8xf32>
  hgraph.return %t : !hgraph.node<8xf32>
}

// -----

// A node-wise value computed row by row is stored for the evict; a row-wise
// reader evaluated at the return (tanh, into the output) still reads it
// there, so it is freed with the other temporaries.
// CHECK-LABEL: func.func @node_fwd(
// CHECK: %[[N:.*]] = memref.alloc
// CHECK: htmpl.traversal nodes ins(%{{.*}} : memref<?x4xf32> as node) outs(%[[N]] : memref<?x4xf32> as node)
// CHECK: call @hector_offload_evict
// CHECK: htmpl.traversal nodes ins(%[[N]] : memref<?x4xf32> as node) outs(%{{.*}} : memref<?x4xf32> as node)
// CHECK: memref.dealloc %[[N]]
// CHECK-NEXT: return
hgraph.func @node_fwd(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"}) -> (!hgraph.node<4xf32> {hgraph.name = "result0", hgraph.role = "output"}, !hgraph.stored<!hgraph.node<4xf32>> {hgraph.name = "saved0", hgraph.role = "saved"}) attributes {hgraph.kind = "training_forward", hgraph.primal = "node"} {
  %r = hgraph.relu %h : !hgraph.node<4xf32>
  %t = hgraph.tanh %r : !hgraph.node<4xf32>
  %s = hgraph.evict %r to host slot 2 : !hgraph.node<4xf32> -> !hgraph.stored<!hgraph.node<4xf32>>
  hgraph.return %t, %s : !hgraph.node<4xf32>, !hgraph.stored<!hgraph.node<4xf32>>
}
