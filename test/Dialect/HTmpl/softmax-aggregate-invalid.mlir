// RUN: hector-opt %s -split-input-file -verify-diagnostics

// One case per htmpl.softmax_aggregate verifier error.

func.func @dynamic_heads(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x?xf32>,
                         %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{scores need a static number of heads (columns), at least 1}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?x?xf32>) values(%z : memref<?x64xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @dynamic_width(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x1xf32>,
                         %z: memref<?x?xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{values and out need static widths}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?x1xf32>) values(%z : memref<?x?xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @widths_differ(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x1xf32>,
                         %z: memref<?x32xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{values width 32 differs from out width 64}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?x1xf32>) values(%z : memref<?x32xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @heads_split(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x3xf32>,
                       %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{out width 64 is not a positive multiple of the 3 heads}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?x3xf32>) values(%z : memref<?x64xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @element_types(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x1xf64>,
                         %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{scores, values and out must share the element type 'f32'}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?x1xf64>) values(%z : memref<?x64xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @launch_bounds(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?x1xf32>,
                         %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{launch_bounds must be a positive multiple of 32 (one warp per destination), got 48}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?x1xf32>) values(%z : memref<?x64xf32>) out(%o : memref<?x64xf32>) {launch_bounds = 48 : i64}
  return
}

// -----

func.func @scores_rank(%rp: memref<?xi32>, %eid: memref<?xi32>, %s: memref<?xf32>,
                       %z: memref<?x64xf32>, %o: memref<?x64xf32>) {
  // expected-error @+1 {{operand #2 must be 2D memref of 32-bit float or 64-bit float values}}
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>) scores(%s : memref<?xf32>) values(%z : memref<?x64xf32>) out(%o : memref<?x64xf32>)
  return
}
