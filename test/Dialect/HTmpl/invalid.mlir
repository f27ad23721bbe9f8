// RUN: hector-opt %s -split-input-file -verify-diagnostics

// One case per htmpl verifier error.

func.func @gemm_int(%a: memref<?x8xi32>, %w: memref<8x8xi32>, %o: memref<?x8xi32>) {
  // expected-error @+1 {{operates on floats, got element type 'i32'}}
  htmpl.gemm lhs(%a : memref<?x8xi32>) rhs(%w : memref<8x8xi32>) out(%o : memref<?x8xi32>)
  return
}

// -----

func.func @gemm_element_types(%a: memref<?x8xf32>, %w: memref<8x8xf16>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{lhs, rhs and out must have one element type}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf16>) out(%o : memref<?x8xf32>)
  return
}

// -----

func.func @gemm_lhs_rank(%a: memref<?xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{lhs must be a row matrix [rows, K], got rank 1}}
  htmpl.gemm lhs(%a : memref<?xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>)
  return
}

// -----

func.func @gemm_tile(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{tile must be three positive sizes [m, n, k]}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) {tile = array<i64: 64, 0, 8>}
  return
}

// -----

func.func @gemm_coarsen(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{coarsening factor must be at least 1, got 0}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) {coarsen = 0}
  return
}

// -----

func.func @gemm_launch_bounds(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{launch bounds must be a multiple of 32 in [32, 1024], got 100}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) {launch_bounds = 100}
  return
}

// -----

func.func @gemm_weight_rank(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>, %seg: memref<?xi32>) {
  // expected-error @+1 {{rhs must be a weight of rank 3 ([T, K, N] with segments) or 4 (per-head blocks), got rank 2}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) segments(%seg : memref<?xi32>)
  return
}

// -----

func.func @gemm_k(%a: memref<?x16xf32>, %w: memref<?x8x8xf32>, %o: memref<?x8xf32>, %seg: memref<?xi32>) {
  // expected-error @+1 {{lhs row width is 16, expected 8}}
  htmpl.gemm lhs(%a : memref<?x16xf32>) rhs(%w : memref<?x8x8xf32>) out(%o : memref<?x8xf32>) segments(%seg : memref<?xi32>)
  return
}

// -----

func.func @gemm_n(%a: memref<?x8xf32>, %w: memref<8x16xf32>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{out row width is 8, expected 16}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x16xf32>) out(%o : memref<?x8xf32>)
  return
}

// -----

func.func @gemm_transposed_n(%a: memref<?x8xf32>, %w: memref<8x16xf32>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{lhs row width is 8, expected 16}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x16xf32>) out(%o : memref<?x16xf32>) {transpose_rhs}
  return
}

// -----

func.func @gemm_per_head_k(%a: memref<?x32xf32>, %w: memref<4x16x8xf32>, %o: memref<?x32xf32>) {
  // expected-error @+1 {{lhs row width is 32, expected 64}}
  htmpl.gemm lhs(%a : memref<?x32xf32>) rhs(%w : memref<4x16x8xf32>) out(%o : memref<?x32xf32>)
  return
}

// -----

func.func @gemm_atomic_without_scatter(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>) {
  // expected-error @+1 {{atomic stores need a scatter list (out_rows): without one every output row has a single producer}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) {atomic}
  return
}

// -----

func.func @gemm_rhs_rows(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>, %i: memref<?xi32>) {
  // expected-error @+1 {{rhs_rows is only meaningful in an outer-product (transpose_lhs) GEMM}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>[%i : memref<?xi32>]) out(%o : memref<?x8xf32>)
  return
}

// -----

func.func @gemm_out_rank(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x2x4xf32>) {
  // expected-error @+1 {{out must be a row matrix [rows, N], got rank 3}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x2x4xf32>)
  return
}

// -----

func.func @outer_transpose_rhs(%a: memref<?x8xf32>, %b: memref<?x8xf32>, %o: memref<8x8xf32>) {
  // expected-error @+1 {{transpose_rhs has no meaning in an outer-product (transpose_lhs) GEMM}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%b : memref<?x8xf32>) out(%o : memref<8x8xf32>) {transpose_lhs, transpose_rhs}
  return
}

// -----

func.func @outer_out_rows(%a: memref<?x8xf32>, %b: memref<?x8xf32>, %o: memref<8x8xf32>, %i: memref<?xi32>) {
  // expected-error @+1 {{an outer-product GEMM writes weight slices; it takes no out_rows scatter list}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%b : memref<?x8xf32>) out(%o : memref<8x8xf32>[%i : memref<?xi32>]) {transpose_lhs}
  return
}

// -----

func.func @outer_rhs_rank(%a: memref<?x8xf32>, %b: memref<8x8xf32>, %o: memref<?x8x8xf32>, %seg: memref<?xi32>) {
  // expected-error @+1 {{rhs of an outer-product GEMM must be a row matrix [rows, N], got rank 3}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%o : memref<?x8x8xf32>) out(%o : memref<?x8x8xf32>) segments(%seg : memref<?xi32>) {transpose_lhs}
  return
}

// -----

func.func @outer_widths(%a: memref<?x8xf32>, %b: memref<?x4xf32>, %o: memref<8x8xf32>) {
  // expected-error @+1 {{rhs row width is 4, expected 8}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%b : memref<?x4xf32>) out(%o : memref<8x8xf32>) {transpose_lhs}
  return
}

// -----

func.func @row_scale_type(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>, %s: memref<?xf16>) {
  // expected-error @+1 {{row_scale must have the element type 'f32'}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) row_scale(%s : memref<?xf16>)
  return
}

// -----

func.func @row_scale_rank(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>, %s: memref<?x2x2xf32>) {
  // expected-error @+1 {{row_scale is [rows] or [rows, heads], got rank 3}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) row_scale(%s : memref<?x2x2xf32>)
  return
}

// -----

func.func @row_scale_heads(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>, %s: memref<?x3xf32>) {
  // expected-error @+1 {{row_scale has 3 heads, which does not divide the output width 8}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x8xf32>) out(%o : memref<?x8xf32>) row_scale(%s : memref<?x3xf32>)
  return
}

// -----

func.func @gemm_index_type(%a: memref<?x8xf32>, %w: memref<8x8xf32>, %o: memref<?x8xf32>, %i: memref<?xf32>) {
  // expected-error @+1 {{operand #3 must be 1D memref of 32-bit signless integer or 64-bit signless integer values}}
  "htmpl.gemm"(%a, %w, %o, %i) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>}> : (memref<?x8xf32>, memref<8x8xf32>, memref<?x8xf32>, memref<?xf32>) -> ()
  return
}

// -----

func.func @traversal_coo_arrays(%s: memref<?xi32>, %d: memref<?xi32>, %x: memref<?x8xf32>) {
  // expected-error @+1 {{'coo' adjacency takes 3 index arrays (src, dst, etype), got 2}}
  htmpl.traversal edges coo(%s, %d : memref<?xi32>, memref<?xi32>) ins(%x : memref<?x8xf32> as src) {
  ^bb0(%e: index, %r: index):
  }
  return
}

// -----

func.func @traversal_csr_arrays(%s: memref<?xi32>, %x: memref<?x8xf32>) {
  // expected-error @+1 {{'csr' adjacency takes 4 index arrays (row_ptr, src, eid, etype), got 3}}
  htmpl.traversal edges csr(%s, %s, %s : memref<?xi32>, memref<?xi32>, memref<?xi32>) ins(%x : memref<?x8xf32> as src) {
  ^bb0(%e: index, %r: index):
  }
  return
}

// -----

func.func @traversal_pairs_arrays(%s: memref<?xi32>, %x: memref<?x8xf32>) {
  // expected-error @+1 {{'pairs' adjacency takes 4 index arrays (src, dst, etype, pair_eid), got 3}}
  htmpl.traversal edges pairs(%s, %s, %s : memref<?xi32>, memref<?xi32>, memref<?xi32>) ins(%x : memref<?x8xf32> as src) {
  ^bb0(%e: index, %r: index):
  }
  return
}

// -----

func.func @traversal_bad_adjacency(%s: memref<?xi32>) {
  // expected-error @+1 {{expected adjacency 'coo', 'csr' or 'pairs'}}
  htmpl.traversal edges none(%s : memref<?xi32>) {
  ^bb0(%e: index):
  }
  return
}

// -----

func.func @traversal_domain(%s: memref<?xi32>) {
  // expected-error @+1 {{expected 'edges' or 'nodes'}}
  htmpl.traversal vertices {
  ^bb0(%e: index):
  }
  return
}

// -----

func.func @traversal_schemes(%s: memref<?xi32>, %x: memref<?x8xf32>) {
  // expected-error @+1 {{needs one access scheme per operand: 1 operands, 0 schemes}}
  "htmpl.traversal"(%s, %s, %s, %x) <{adjacency_format = 1 : i32, domain = 0 : i32, schemes = [], operandSegmentSizes = array<i32: 3, 0, 0, 1, 0>}> ({
  ^bb0(%e: index, %r: index):
    htmpl.yield
  }) : (memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?x8xf32>) -> ()
  return
}

// -----

func.func @traversal_nodes_with_adjacency(%s: memref<?xi32>) {
  // expected-error @+1 {{edge traversals need 'coo', 'csr' or 'pairs' adjacency and node traversals none}}
  "htmpl.traversal"(%s, %s, %s) <{adjacency_format = 1 : i32, domain = 1 : i32, schemes = [], operandSegmentSizes = array<i32: 3, 0, 0, 0, 0>}> ({
  ^bb0(%e: index):
    htmpl.yield
  }) : (memref<?xi32>, memref<?xi32>, memref<?xi32>) -> ()
  return
}

// -----

func.func @scheme_src_in_nodes(%x: memref<?x8xf32>) {
  // expected-error @+1 {{operand #0: access scheme 'src' needs an edge traversal}}
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as src) {
  ^bb0(%n: index, %r: index):
  }
  return
}

// -----

func.func @scheme_node_in_edges(%s: memref<?xi32>, %x: memref<?x8xf32>) {
  // expected-error @+1 {{operand #0: access scheme 'node' needs a node traversal}}
  htmpl.traversal edges coo(%s, %s, %s : memref<?xi32>, memref<?xi32>, memref<?xi32>) ins(%x : memref<?x8xf32> as node) {
  ^bb0(%e: index, %r: index):
  }
  return
}

// -----

func.func @scheme_compact_without_map(%s: memref<?xi32>, %x: memref<?x8xf32>) {
  // expected-error @+1 {{operand #0: access scheme 'compact' needs a compact_map}}
  htmpl.traversal edges coo(%s, %s, %s : memref<?xi32>, memref<?xi32>, memref<?xi32>) ins(%x : memref<?x8xf32> as compact) {
  ^bb0(%e: index, %r: index):
  }
  return
}

// -----

func.func @scheme_ntype_without_types(%x: memref<?x8xf32>) {
  // expected-error @+1 {{operand #0: access scheme 'ntype' needs node_types}}
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as ntype) {
  ^bb0(%n: index, %r: index):
  }
  return
}

// -----

func.func @scheme_row_of_scalar(%x: memref<f32>) {
  // expected-error @+1 {{operand #0: access scheme 'node' selects a row, but the operand has rank 0}}
  htmpl.traversal nodes ins(%x : memref<f32> as node) {
  ^bb0(%n: index, %r: index):
  }
  return
}

// -----

func.func @unknown_scheme(%x: memref<?x8xf32>) {
  // expected-error @+1 {{unknown access scheme 'column'}}
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as column) {
  ^bb0(%n: index, %r: index):
  }
  return
}

// -----

func.func @traversal_launch_bounds(%x: memref<?x8xf32>) {
  // expected-error @+1 {{launch bounds must be a multiple of 32 in [32, 1024], got 2048}}
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as node) launch_bounds(2048) {
  ^bb0(%n: index, %r: index):
  }
  return
}

// -----

func.func @traversal_block_arguments(%x: memref<?x8xf32>) {
  // expected-error @+1 {{body takes 2 index arguments (the edge or node id, then one row per operand), got 1}}
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as node) {
  ^bb0(%n: index):
  }
  return
}

// -----

func.func @traversal_block_argument_type(%x: memref<?x8xf32>) {
  // expected-error @+1 {{body arguments must be of type index, got 'i32'}}
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as node) {
  ^bb0(%n: index, %r: i32):
  }
  return
}

// -----

func.func @accumulate_outside(%x: memref<?x8xf32>, %v: f32, %i: index) {
  // expected-error @+1 {{must be nested in an htmpl.traversal}}
  htmpl.accumulate add %v, %x[%i, %i] : f32, memref<?x8xf32>
  return
}

// -----

func.func @accumulate_into_input(%x: memref<?x8xf32>, %v: f32) {
  htmpl.traversal nodes ins(%x : memref<?x8xf32> as node) {
  ^bb0(%n: index, %r: index):
    // expected-error @+1 {{destination must be one of the enclosing traversal's outs}}
    htmpl.accumulate add %v, %x[%r, %r] : f32, memref<?x8xf32>
  }
  return
}

// -----

func.func @accumulate_indices(%x: memref<?x8xf32>, %v: f32) {
  htmpl.traversal nodes outs(%x : memref<?x8xf32> as node) {
  ^bb0(%n: index, %r: index):
    // expected-error @+1 {{needs 2 indices for its destination, got 1}}
    htmpl.accumulate add %v, %x[%r] : f32, memref<?x8xf32>
  }
  return
}

// -----

func.func @accumulate_type(%x: memref<?x8xf32>, %v: f16) {
  htmpl.traversal nodes outs(%x : memref<?x8xf32> as node) {
  ^bb0(%n: index, %r: index):
    // expected-error @+1 {{value type 'f16' does not match the destination element type 'f32'}}
    htmpl.accumulate max %v, %x[%r, %r] : f16, memref<?x8xf32>
  }
  return
}

// -----

func.func @yield_outside() {
  // expected-error @+1 {{expects parent op 'htmpl.traversal'}}
  htmpl.yield
}

// -----

func.func @row_dot_without_into(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>) {
  // expected-error @+1 {{row_dot and into go together}}
  "htmpl.gemm"(%a, %w, %o, %seg, %v) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0, 1, 0>}> : (memref<?x8xf32>, memref<?x8x4xf32>, memref<?x4xf32>, memref<?xi32>, memref<?x4xf32>) -> ()
  return
}

// -----

func.func @row_dot_outer(%a: memref<?x8xf32>, %dy: memref<?x4xf32>, %dw: memref<?x8x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot is an epilogue of row mode; an outer-product (transpose_lhs) GEMM has no output rows to dot}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%dy : memref<?x4xf32>) out(%dw : memref<?x8x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?x1xf32>) {transpose_lhs}
  return
}

// -----

func.func @row_dot_per_head(%a: memref<?x8xf32>, %w: memref<?x2x4x2xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot sums whole output rows; it takes no per-head (block-diagonal) weight}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x2x4x2xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?x1xf32>)
  return
}

// -----

func.func @row_dot_accumulate(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot dots the computed row alone; it takes no accumulate, atomic or row_scale}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?x1xf32>) {accumulate}
  return
}

// -----

func.func @row_dot_row_scale(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %c: memref<?xf32>, %v: memref<?x4xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot dots the computed row alone; it takes no accumulate, atomic or row_scale}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_scale(%c : memref<?xf32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?x1xf32>)
  return
}

// -----

func.func @row_dot_element(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf16>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot operands must have the element type 'f32'}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf16>) into(%s : memref<?x1xf32>)
  return
}

// -----

func.func @row_dot_vector_rank(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<4xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot vector must be [types, N], got rank 1}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<4xf32>) into(%s : memref<?x1xf32>)
  return
}

// -----

func.func @row_dot_vector_width(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x8xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot vector width is 8, expected 4}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x8xf32>) into(%s : memref<?x1xf32>)
  return
}

// -----

func.func @row_dot_no_row(%a: memref<?x8xf32>, %w: memref<8x4xf32>, %o: memref<?x4xf32>, %v: memref<0x4xf32>, %s: memref<?x1xf32>) {
  // expected-error @+1 {{row_dot vector without segments needs a row}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<8x4xf32>) out(%o : memref<?x4xf32>) row_dot(%v : memref<0x4xf32>) into(%s : memref<?x1xf32>)
  return
}

// -----

func.func @row_dot_into_rank(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>, %s: memref<?xf32>) {
  // expected-error @+1 {{row_dot result must be [rows, heads], got rank 1}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?xf32>)
  return
}

// -----

func.func @row_dot_heads_not_dividing(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>, %s: memref<?x3xf32>) {
  // expected-error @+1 {{row_dot over 3 heads needs a static output width divisible by it}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?x3xf32>)
  return
}

// -----

func.func @row_dot_heads_dynamic_width(%a: memref<?x8xf32>, %w: memref<?x8x?xf32>, %o: memref<?x?xf32>, %seg: memref<?xi32>, %v: memref<?x?xf32>, %s: memref<?x2xf32>) {
  // expected-error @+1 {{row_dot over 2 heads needs a static output width divisible by it}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x?xf32>) out(%o : memref<?x?xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x?xf32>) into(%s : memref<?x2xf32>)
  return
}

// -----

func.func @row_dot_heads_unknown(%a: memref<?x8xf32>, %w: memref<?x8x4xf32>, %o: memref<?x4xf32>, %seg: memref<?xi32>, %v: memref<?x4xf32>, %s: memref<?x?xf32>) {
  // expected-error @+1 {{row_dot result needs a static number of heads (columns), at least 1}}
  htmpl.gemm lhs(%a : memref<?x8xf32>) rhs(%w : memref<?x8x4xf32>) out(%o : memref<?x4xf32>) segments(%seg : memref<?xi32>) row_dot(%v : memref<?x4xf32>) into(%s : memref<?x?xf32>)
  return
}
