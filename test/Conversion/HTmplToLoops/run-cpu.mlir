// REQUIRES: mlir-runner
// RUN: hector-opt %s --htmpl-to-loops --convert-scf-to-cf --convert-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

// Executes lowered instances on the CPU and checks the numbers, worked out
// by hand in the comments.

memref.global "private" constant @x : memref<3x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]>
// Two 2x2 weights: identity and diag(2, 3).
memref.global "private" constant @w : memref<2x2x2xf32> = dense<[[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]]>
memref.global "private" constant @seg : memref<3xi32> = dense<[0, 1, 3]>
memref.global "private" constant @gather : memref<3xi64> = dense<[2, 0, 1]>
memref.global "private" constant @scale : memref<3xf32> = dense<[1.0, 0.5, -1.0]>

// Graph: 3 nodes; edges e0: 0->1 (type 0), e1: 2->1 (type 0), e2: 0->2
// (type 1), e3: 1->2 (type 1). The CSR row of node 2 lists e3 before e2.
memref.global "private" constant @src : memref<4xi32> = dense<[0, 2, 0, 1]>
memref.global "private" constant @dst : memref<4xi32> = dense<[1, 1, 2, 2]>
memref.global "private" constant @ety : memref<4xi32> = dense<[0, 0, 1, 1]>
memref.global "private" constant @row_ptr : memref<4xi32> = dense<[0, 0, 2, 4]>
memref.global "private" constant @csr_src : memref<4xi32> = dense<[0, 2, 1, 0]>
memref.global "private" constant @csr_eid : memref<4xi32> = dense<[0, 1, 3, 2]>
memref.global "private" constant @csr_ety : memref<4xi32> = dense<[0, 0, 1, 1]>
memref.global "private" constant @norm : memref<4xf32> = dense<[0.5, 0.5, 1.0, 2.0]>
memref.global "private" constant @a : memref<2x2xf32> = dense<[[1.0, 1.0], [10.0, 100.0]]>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

// out[i] = scale[i] * x[gather[i]] . W[type(i)], types {0}, {1, 2}.
func.func @gemm(%x: memref<?x2xf32>, %gather: memref<?xi64>,
                %w: memref<?x2x2xf32>, %seg: memref<?xi32>,
                %scale: memref<?xf32>, %out: memref<?x2xf32>) {
  htmpl.gemm lhs(%x : memref<?x2xf32>[%gather : memref<?xi64>])
             rhs(%w : memref<?x2x2xf32>) out(%out : memref<?x2xf32>)
             segments(%seg : memref<?xi32>) row_scale(%scale : memref<?xf32>)
  return
}

// dW[t] = sum over rows i of type t of x[i]^T (x) x[gather[i]].
func.func @weight_gradient(%x: memref<?x2xf32>, %gather: memref<?xi64>,
                           %seg: memref<?xi32>, %dw: memref<?x2x2xf32>) {
  htmpl.gemm lhs(%x : memref<?x2xf32>)
             rhs(%x : memref<?x2xf32>[%gather : memref<?xi64>])
             out(%dw : memref<?x2x2xf32>) segments(%seg : memref<?xi32>)
             {transpose_lhs}
  return
}

// sum[dst] += x[src] * a[etype] * norm[e]; max[dst] = max(..., same value).
func.func @aggregate_coo(%src: memref<?xi32>, %dst: memref<?xi32>,
                         %ety: memref<?xi32>, %x: memref<?x2xf32>,
                         %a: memref<?x2xf32>, %norm: memref<?xf32>,
                         %sum: memref<?x2xf32>, %max: memref<?x2xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x2xf32> as src, %a : memref<?x2xf32> as etype,
          %norm : memref<?xf32> as edge)
      outs(%sum : memref<?x2xf32> as dst, %max : memref<?x2xf32> as dst) {
  ^bb0(%e: index, %rx: index, %ra: index, %rn: index, %rs: index, %rm: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c2 step %c1 {
      %xv = memref.load %x[%rx, %f] : memref<?x2xf32>
      %av = memref.load %a[%ra, %f] : memref<?x2xf32>
      %p = arith.mulf %xv, %av : f32
      %v = arith.mulf %p, %n : f32
      htmpl.accumulate add %v, %sum[%rs, %f] : f32, memref<?x2xf32>
      htmpl.accumulate max %v, %max[%rm, %f] : f32, memref<?x2xf32>
    }
  }
  return
}

// The same aggregation in CSR order.
func.func @aggregate_csr(%row_ptr: memref<?xi32>, %src: memref<?xi32>,
                         %eid: memref<?xi32>, %ety: memref<?xi32>,
                         %x: memref<?x2xf32>, %a: memref<?x2xf32>,
                         %norm: memref<?xf32>, %sum: memref<?x2xf32>,
                         %max: memref<?x2xf32>) {
  htmpl.traversal edges csr(%row_ptr, %src, %eid, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x2xf32> as src, %a : memref<?x2xf32> as etype,
          %norm : memref<?xf32> as edge)
      outs(%sum : memref<?x2xf32> as dst, %max : memref<?x2xf32> as dst) {
  ^bb0(%e: index, %rx: index, %ra: index, %rn: index, %rs: index, %rm: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c2 step %c1 {
      %xv = memref.load %x[%rx, %f] : memref<?x2xf32>
      %av = memref.load %a[%ra, %f] : memref<?x2xf32>
      %p = arith.mulf %xv, %av : f32
      %v = arith.mulf %p, %n : f32
      htmpl.accumulate add %v, %sum[%rs, %f] : f32, memref<?x2xf32>
      htmpl.accumulate max %v, %max[%rm, %f] : f32, memref<?x2xf32>
    }
  }
  return
}

func.func @print(%m: memref<3x2xf32>) {
  %u = memref.cast %m : memref<3x2xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @fill(%m: memref<3x2xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c2 step %c1 {
      memref.store %v, %m[%i, %j] : memref<3x2xf32>
    }
  }
  return
}

func.func @main() {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %x0 = memref.get_global @x : memref<3x2xf32>
  %w0 = memref.get_global @w : memref<2x2x2xf32>
  %seg0 = memref.get_global @seg : memref<3xi32>
  %gather0 = memref.get_global @gather : memref<3xi64>
  %scale0 = memref.get_global @scale : memref<3xf32>
  %x = memref.cast %x0 : memref<3x2xf32> to memref<?x2xf32>
  %w = memref.cast %w0 : memref<2x2x2xf32> to memref<?x2x2xf32>
  %seg = memref.cast %seg0 : memref<3xi32> to memref<?xi32>
  %gather = memref.cast %gather0 : memref<3xi64> to memref<?xi64>
  %scale = memref.cast %scale0 : memref<3xf32> to memref<?xf32>

  // Row 0 (type 0): 1.0 * x[2] . I = [5, 6].
  // Row 1 (type 1): 0.5 * x[0] . diag(2, 3) = [1, 3].
  // Row 2 (type 1): -1.0 * x[1] . diag(2, 3) = [-6, -12].
  // CHECK: sizes = [3, 2]
  // CHECK-NEXT: [5, 6],
  // CHECK-NEXT: [1, 3],
  // CHECK-NEXT: [-6, -12]]
  %out = memref.alloc() : memref<3x2xf32>
  %outd = memref.cast %out : memref<3x2xf32> to memref<?x2xf32>
  call @gemm(%x, %gather, %w, %seg, %scale, %outd) : (memref<?x2xf32>, memref<?xi64>, memref<?x2x2xf32>, memref<?xi32>, memref<?xf32>, memref<?x2xf32>) -> ()
  call @print(%out) : (memref<3x2xf32>) -> ()

  // dW[0] = x[0]^T (x) x[2] = [1, 2]^T [5, 6] = [[5, 6], [10, 12]].
  // dW[1] = [3, 4]^T [1, 2] + [5, 6]^T [3, 4] = [[18, 26], [22, 32]].
  // CHECK: sizes = [2, 2, 2]
  // CHECK-NEXT: [5, 6],
  // CHECK-NEXT: [10, 12]],
  // CHECK-NEXT: [18, 26],
  // CHECK-NEXT: [22, 32]]]
  %dw = memref.alloc() : memref<2x2x2xf32>
  %dwd = memref.cast %dw : memref<2x2x2xf32> to memref<?x2x2xf32>
  call @weight_gradient(%x, %gather, %seg, %dwd) : (memref<?x2xf32>, memref<?xi64>, memref<?xi32>, memref<?x2x2xf32>) -> ()
  %dwu = memref.cast %dw : memref<2x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%dwu) : (memref<*xf32>) -> ()

  %src0 = memref.get_global @src : memref<4xi32>
  %dst0 = memref.get_global @dst : memref<4xi32>
  %ety0 = memref.get_global @ety : memref<4xi32>
  %rp0 = memref.get_global @row_ptr : memref<4xi32>
  %csrc0 = memref.get_global @csr_src : memref<4xi32>
  %ceid0 = memref.get_global @csr_eid : memref<4xi32>
  %cety0 = memref.get_global @csr_ety : memref<4xi32>
  %norm0 = memref.get_global @norm : memref<4xf32>
  %a0 = memref.get_global @a : memref<2x2xf32>
  %src = memref.cast %src0 : memref<4xi32> to memref<?xi32>
  %dst = memref.cast %dst0 : memref<4xi32> to memref<?xi32>
  %ety = memref.cast %ety0 : memref<4xi32> to memref<?xi32>
  %rp = memref.cast %rp0 : memref<4xi32> to memref<?xi32>
  %csrc = memref.cast %csrc0 : memref<4xi32> to memref<?xi32>
  %ceid = memref.cast %ceid0 : memref<4xi32> to memref<?xi32>
  %cety = memref.cast %cety0 : memref<4xi32> to memref<?xi32>
  %norm = memref.cast %norm0 : memref<4xf32> to memref<?xf32>
  %a = memref.cast %a0 : memref<2x2xf32> to memref<?x2xf32>

  // Edge values: e0 [0.5, 1], e1 [2.5, 3], e2 [10, 200], e3 [60, 800].
  // Sums: node 0 none, node 1 [3, 4], node 2 [70, 1000]; maxima: node 0
  // keeps -inf, node 1 [2.5, 3], node 2 [60, 800]. COO and CSR agree.
  // CHECK: sizes = [3, 2]
  // CHECK-NEXT: [0, 0],
  // CHECK-NEXT: [3, 4],
  // CHECK-NEXT: [70, 1000]]
  // CHECK-NEXT: sizes = [3, 2]
  // CHECK-NEXT: [-inf, -inf],
  // CHECK-NEXT: [2.5, 3],
  // CHECK-NEXT: [60, 800]]
  // CHECK: sizes = [3, 2]
  // CHECK-NEXT: [0, 0],
  // CHECK-NEXT: [3, 4],
  // CHECK-NEXT: [70, 1000]]
  // CHECK-NEXT: sizes = [3, 2]
  // CHECK-NEXT: [-inf, -inf],
  // CHECK-NEXT: [2.5, 3],
  // CHECK-NEXT: [60, 800]]
  %sum = memref.alloc() : memref<3x2xf32>
  %max = memref.alloc() : memref<3x2xf32>
  %sumd = memref.cast %sum : memref<3x2xf32> to memref<?x2xf32>
  %maxd = memref.cast %max : memref<3x2xf32> to memref<?x2xf32>
  call @fill(%sum, %zero) : (memref<3x2xf32>, f32) -> ()
  call @fill(%max, %ninf) : (memref<3x2xf32>, f32) -> ()
  call @aggregate_coo(%src, %dst, %ety, %x, %a, %norm, %sumd, %maxd) : (memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?x2xf32>, memref<?x2xf32>, memref<?xf32>, memref<?x2xf32>, memref<?x2xf32>) -> ()
  call @print(%sum) : (memref<3x2xf32>) -> ()
  call @print(%max) : (memref<3x2xf32>) -> ()
  call @fill(%sum, %zero) : (memref<3x2xf32>, f32) -> ()
  call @fill(%max, %ninf) : (memref<3x2xf32>, f32) -> ()
  call @aggregate_csr(%rp, %csrc, %ceid, %cety, %x, %a, %norm, %sumd, %maxd) : (memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?x2xf32>, memref<?x2xf32>, memref<?xf32>, memref<?x2xf32>, memref<?x2xf32>) -> ()
  call @print(%sum) : (memref<3x2xf32>) -> ()
  call @print(%max) : (memref<3x2xf32>) -> ()
  memref.dealloc %out : memref<3x2xf32>
  memref.dealloc %dw : memref<2x2x2xf32>
  memref.dealloc %sum : memref<3x2xf32>
  memref.dealloc %max : memref<3x2xf32>
  return
}
