// RUN: hector-opt %s --htmpl-to-loops --split-input-file | FileCheck %s
// RUN: hector-opt %s --htmpl-to-loops --split-input-file | FileCheck %s --check-prefix=NONE
// The CPU path is closed: upstream passes take every result to the LLVM
// dialect and on to LLVM IR.
// RUN: hector-opt %s --split-input-file --htmpl-to-loops --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --lower-affine --convert-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM
// RUN: hector-opt %s --split-input-file --htmpl-to-loops --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --lower-affine --convert-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-translate --split-input-file --mlir-to-llvmir | FileCheck %s --check-prefix=IR

// Every GEMM form and every traversal form and access scheme, lowered to
// scf.parallel nests. No htmpl op survives.
// NONE-NOT: htmpl.
// LLVM-NOT: {{(htmpl|scf|memref|arith|cf|math|affine)\.}}
// IR-DAG: atomicrmw fadd
// IR-DAG: atomicrmw fmaximum
// IR-DAG: atomicrmw add
// IR-DAG: atomicrmw max

// Row mode without lists: rows outermost, columns nested, k reduced in an
// scf.for; a plain store.
// CHECK-LABEL: func.func @gemm_plain
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<8x4xf32>, %[[OUT:[a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK: %[[M:[a-zA-Z0-9_]+]] = memref.dim %[[LHS]], %{{.*}} : memref<?x8xf32>
// CHECK: scf.parallel (%[[I:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[M]])
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%{{.*}})
// CHECK: %[[SUM:[a-zA-Z0-9_]+]] = scf.for %[[K:[a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[a-zA-Z0-9_]+]] = %{{.*}}) -> (f32)
// CHECK: %[[X:[a-zA-Z0-9_]+]] = memref.load %[[LHS]][%[[I]], %[[K]]]
// CHECK: %[[W:[a-zA-Z0-9_]+]] = memref.load %[[RHS]][%[[K]], %[[N]]]
// CHECK: %[[P:[a-zA-Z0-9_]+]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK: %[[NEXT:[a-zA-Z0-9_]+]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]], %[[OUT]][%[[I]], %[[N]]]
// CHECK-NOT: memref.atomic_rmw
// CHECK: return
func.func @gemm_plain(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                      %out: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>)
  return
}

// -----

// Gather list and per-type segments: M is the gather list's length; the
// row's type is a binary search over the offsets, before the column loop;
// rows outside [seg[0], seg[T]) are skipped inside it.
// CHECK-LABEL: func.func @gemm_typed_gather
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[ROWS:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<?x8x4xf32>, %[[OUT:[a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[SEG:[a-zA-Z0-9_]+]]: memref<?xi32>)
// CHECK: %[[M:[a-zA-Z0-9_]+]] = memref.dim %[[ROWS]], %{{.*}} : memref<?xi32>
// CHECK: scf.parallel (%[[I:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[M]])
// CHECK: %[[SEGLEN:[a-zA-Z0-9_]+]] = memref.dim %[[SEG]]
// CHECK: %[[T:[a-zA-Z0-9_]+]] = arith.subi %[[SEGLEN]], %{{.*}} : index
// CHECK: %[[FIRST:[a-zA-Z0-9_]+]] = memref.load %[[SEG]][%{{.*}}]
// CHECK: %[[FIRSTI:[a-zA-Z0-9_]+]] = arith.index_cast %[[FIRST]] : i32 to index
// CHECK: %[[LAST:[a-zA-Z0-9_]+]] = memref.load %[[SEG]][%[[T]]]
// CHECK: %[[LASTI:[a-zA-Z0-9_]+]] = arith.index_cast %[[LAST]] : i32 to index
// CHECK: %[[GE:[a-zA-Z0-9_]+]] = arith.cmpi sle, %[[FIRSTI]], %[[I]]
// CHECK: %[[LT:[a-zA-Z0-9_]+]] = arith.cmpi slt, %[[I]], %[[LASTI]]
// CHECK: %[[IN:[a-zA-Z0-9_]+]] = arith.andi %[[GE]], %[[LT]]
// CHECK: %[[TYPE:[a-zA-Z0-9_]+]]:2 = scf.while
// CHECK: scf.condition
// CHECK: } do {
// CHECK: memref.load %[[SEG]]
// CHECK: arith.cmpi sle
// CHECK: scf.yield
// CHECK: %[[L:[a-zA-Z0-9_]+]] = memref.load %[[ROWS]][%[[I]]] : memref<?xi32>
// CHECK: %[[LI:[a-zA-Z0-9_]+]] = arith.index_cast %[[L]] : i32 to index
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) =
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: scf.for %[[K:[a-zA-Z0-9_]+]] =
// CHECK: memref.load %[[LHS]][%[[LI]], %[[K]]]
// CHECK: memref.load %[[RHS]][%[[TYPE]]#0, %[[K]], %[[N]]]
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I]], %[[N]]]
func.func @gemm_typed_gather(%lhs: memref<?x8xf32>, %rows: memref<?xi32>,
                             %rhs: memref<?x8x4xf32>, %out: memref<?x4xf32>,
                             %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x8x4xf32>) out(%out : memref<?x4xf32>)
             segments(%seg : memref<?xi32>)
  return
}

// -----

// Scatter list (i64) with atomic accumulation and a per-row scalar.
// CHECK-LABEL: func.func @gemm_scatter_atomic
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<8x4xf32>, %[[OUT:[a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[ORows:[a-zA-Z0-9_]+]]: memref<?xi64>, %[[S:[a-zA-Z0-9_]+]]: memref<?xf32>)
// CHECK: scf.parallel (%[[I:[a-zA-Z0-9_]+]]) =
// CHECK: %[[O:[a-zA-Z0-9_]+]] = memref.load %[[ORows]][%[[I]]] : memref<?xi64>
// CHECK: %[[OI:[a-zA-Z0-9_]+]] = arith.index_cast %[[O]] : i64 to index
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) =
// CHECK: %[[DOT:[a-zA-Z0-9_]+]] = scf.for
// CHECK: %[[SI:[a-zA-Z0-9_]+]] = memref.load %[[S]][%[[I]]] : memref<?xf32>
// CHECK: %[[V:[a-zA-Z0-9_]+]] = arith.mulf %[[DOT]], %[[SI]] : f32
// CHECK: memref.atomic_rmw addf %[[V]], %[[OUT]][%[[OI]], %[[N]]]
// CHECK-NOT: memref.store
// CHECK: return
func.func @gemm_scatter_atomic(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                               %out: memref<?x4xf32>, %orows: memref<?xi64>,
                               %s: memref<?xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>[%orows : memref<?xi64>])
             row_scale(%s : memref<?xf32>) {accumulate, atomic}
  return
}

// -----

// Atomic without accumulate: the scattered rows are cleared by a first loop
// nest, then every producer adds atomically.
// CHECK-LABEL: func.func @gemm_scatter_atomic_overwrite
// CHECK-SAME: %[[OUT:[a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[ORows:[a-zA-Z0-9_]+]]: memref<?xi32>)
// CHECK: %[[ZERO:[a-zA-Z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.parallel (%[[I0:[a-zA-Z0-9_]+]]) =
// CHECK: %[[O0:[a-zA-Z0-9_]+]] = memref.load %[[ORows]][%[[I0]]]
// CHECK: %[[O0I:[a-zA-Z0-9_]+]] = arith.index_cast %[[O0]]
// CHECK: scf.parallel (%[[N0:[a-zA-Z0-9_]+]]) =
// CHECK: memref.store %[[ZERO]], %[[OUT]][%[[O0I]], %[[N0]]]
// CHECK: scf.parallel (%[[I:[a-zA-Z0-9_]+]]) =
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) =
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[OUT]][%{{.*}}, %[[N]]]
func.func @gemm_scatter_atomic_overwrite(%lhs: memref<?x8xf32>,
                                         %rhs: memref<8x4xf32>,
                                         %out: memref<?x4xf32>,
                                         %orows: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>[%orows : memref<?xi32>]) {atomic}
  return
}

// -----

// Accumulate without atomics: load, add, store.
// CHECK-LABEL: func.func @gemm_accumulate
// CHECK-SAME: %[[OUT:[a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK: scf.parallel (%[[I:[a-zA-Z0-9_]+]]) =
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) =
// CHECK: %[[DOT:[a-zA-Z0-9_]+]] = scf.for
// CHECK: %[[OLD:[a-zA-Z0-9_]+]] = memref.load %[[OUT]][%[[I]], %[[N]]]
// CHECK: %[[NEW:[a-zA-Z0-9_]+]] = arith.addf %[[OLD]], %[[DOT]] : f32
// CHECK: memref.store %[[NEW]], %[[OUT]][%[[I]], %[[N]]]
// CHECK-NOT: memref.atomic_rmw
// CHECK: return
func.func @gemm_accumulate(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                           %out: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
             out(%out : memref<?x4xf32>) {accumulate}
  return
}

// -----

// Input gradient: typed transposed weights [T, N, K], read as [t, n, k].
// CHECK-LABEL: func.func @gemm_transpose_rhs
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<?x8x4xf32>,
// CHECK: %[[TYPE:[a-zA-Z0-9_]+]]:2 = scf.while
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[C8:[a-zA-Z0-9_]+]]) step
// CHECK: scf.for %[[K:[a-zA-Z0-9_]+]] = %{{.*}} to %[[C4:[a-zA-Z0-9_]+]] step
// CHECK: memref.load %[[LHS]][%{{.*}}, %[[K]]]
// CHECK: memref.load %[[RHS]][%[[TYPE]]#0, %[[N]], %[[K]]] : memref<?x8x4xf32>
// CHECK: memref.atomic_rmw addf
func.func @gemm_transpose_rhs(%lhs: memref<?x4xf32>, %rhs: memref<?x8x4xf32>,
                              %out: memref<?x8xf32>, %orows: memref<?xi32>,
                              %seg: memref<?xi32>) {
  htmpl.gemm lhs(%lhs : memref<?x4xf32>) rhs(%rhs : memref<?x8x4xf32>)
             out(%out : memref<?x8xf32>[%orows : memref<?xi32>])
             segments(%seg : memref<?xi32>) {accumulate, atomic, transpose_rhs}
  return
}

// -----

// Per-head block-diagonal weights [T, H, K/H, N/H] and a [M, H] row scale:
// column n is column n % (N/H) of head n / (N/H), whose k range starts at
// head * K/H; the scale head is n / (N / H_scale).
// CHECK-LABEL: func.func @gemm_per_head
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<?x4x16x8xf32>, %[[OUT:[a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[SEG:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[S:[a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK-DAG: %[[C8:[a-zA-Z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:[a-zA-Z0-9_]+]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:[a-zA-Z0-9_]+]] = arith.constant 32 : index
// CHECK: scf.parallel (%[[I:[a-zA-Z0-9_]+]]) =
// CHECK: %[[TYPE:[a-zA-Z0-9_]+]]:2 = scf.while
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[C32]])
// CHECK: %[[H:[a-zA-Z0-9_]+]] = arith.divui %[[N]], %[[C8]] : index
// CHECK: %[[J:[a-zA-Z0-9_]+]] = arith.remui %[[N]], %[[C8]] : index
// CHECK: %[[KB:[a-zA-Z0-9_]+]] = arith.muli %[[H]], %[[C16]] : index
// CHECK: scf.for %[[K:[a-zA-Z0-9_]+]] = %{{.*}} to %[[C16]]
// CHECK: %[[COL:[a-zA-Z0-9_]+]] = arith.addi %[[KB]], %[[K]] : index
// CHECK: memref.load %[[LHS]][%[[I]], %[[COL]]]
// CHECK: memref.load %[[RHS]][%[[TYPE]]#0, %[[H]], %[[K]], %[[J]]]
// CHECK: %[[SH:[a-zA-Z0-9_]+]] = arith.divui %[[N]], %{{.*}} : index
// CHECK: memref.load %[[S]][%[[I]], %[[SH]]] : memref<?x4xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I]], %[[N]]]
func.func @gemm_per_head(%lhs: memref<?x64xf32>, %rhs: memref<?x4x16x8xf32>,
                         %out: memref<?x32xf32>, %seg: memref<?xi32>,
                         %s: memref<?x4xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<?x4x16x8xf32>)
             out(%out : memref<?x32xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?x4xf32>)
  return
}

// -----

// Weight gradient: one iteration per weight row (t, k) with the columns
// nested; each sums its segment's rows in an scf.for, so no atomics even
// with `atomic`.
// CHECK-LABEL: func.func @gemm_outer_product
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[LR:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<?x32xf32>, %[[RR:[a-zA-Z0-9_]+]]: memref<?xi64>, %[[OUT:[a-zA-Z0-9_]+]]: memref<?x64x32xf32>, %[[SEG:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[S:[a-zA-Z0-9_]+]]: memref<?xf32>)
// CHECK-DAG: %[[C32:[a-zA-Z0-9_]+]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:[a-zA-Z0-9_]+]] = arith.constant 64 : index
// CHECK: %[[SEGLEN:[a-zA-Z0-9_]+]] = memref.dim %[[SEG]]
// CHECK: %[[T:[a-zA-Z0-9_]+]] = arith.subi %[[SEGLEN]]
// CHECK: scf.parallel (%[[TI:[a-zA-Z0-9_]+]], %[[K:[a-zA-Z0-9_]+]]) = (%{{.*}}, %{{.*}}) to (%[[T]], %[[C64]])
// CHECK: %[[B:[a-zA-Z0-9_]+]] = memref.load %[[SEG]][%[[TI]]]
// CHECK: %[[BI:[a-zA-Z0-9_]+]] = arith.index_cast %[[B]]
// CHECK: %[[T1:[a-zA-Z0-9_]+]] = arith.addi %[[TI]], %{{.*}} : index
// CHECK: %[[E:[a-zA-Z0-9_]+]] = memref.load %[[SEG]][%[[T1]]]
// CHECK: %[[EI:[a-zA-Z0-9_]+]] = arith.index_cast %[[E]]
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[C32]])
// CHECK: %[[SUM:[a-zA-Z0-9_]+]] = scf.for %[[I:[a-zA-Z0-9_]+]] = %[[BI]] to %[[EI]] step %{{.*}} iter_args
// CHECK: %[[L:[a-zA-Z0-9_]+]] = memref.load %[[LR]][%[[I]]] : memref<?xi32>
// CHECK: %[[LI:[a-zA-Z0-9_]+]] = arith.index_cast %[[L]]
// CHECK: %[[R:[a-zA-Z0-9_]+]] = memref.load %[[RR]][%[[I]]] : memref<?xi64>
// CHECK: %[[RI:[a-zA-Z0-9_]+]] = arith.index_cast %[[R]]
// CHECK: %[[X:[a-zA-Z0-9_]+]] = memref.load %[[LHS]][%[[LI]], %[[K]]]
// CHECK: %[[Y:[a-zA-Z0-9_]+]] = memref.load %[[RHS]][%[[RI]], %[[N]]]
// CHECK: %[[XY:[a-zA-Z0-9_]+]] = arith.mulf %[[X]], %[[Y]]
// CHECK: %[[SI:[a-zA-Z0-9_]+]] = memref.load %[[S]][%[[I]]]
// CHECK: arith.mulf %[[XY]], %[[SI]]
// CHECK: %[[OLD:[a-zA-Z0-9_]+]] = memref.load %[[OUT]][%[[TI]], %[[K]], %[[N]]]
// CHECK: %[[NEW:[a-zA-Z0-9_]+]] = arith.addf %[[OLD]], %[[SUM]]
// CHECK: memref.store %[[NEW]], %[[OUT]][%[[TI]], %[[K]], %[[N]]]
// CHECK-NOT: memref.atomic_rmw
// CHECK: return
func.func @gemm_outer_product(%lhs: memref<?x64xf32>, %lrows: memref<?xi32>,
                              %rhs: memref<?x32xf32>, %rrows: memref<?xi64>,
                              %out: memref<?x64x32xf32>, %seg: memref<?xi32>,
                              %s: memref<?xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%lrows : memref<?xi32>])
             rhs(%rhs : memref<?x32xf32>[%rrows : memref<?xi64>])
             out(%out : memref<?x64x32xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?xf32>) {accumulate, atomic, transpose_lhs}
  return
}

// -----

// Per-head weight gradient without segments: rows [0, M), iterations over
// (h, k) and n, columns h * K/H + k of lhs and h * N/H + n of rhs.
// CHECK-LABEL: func.func @gemm_outer_product_per_head
// CHECK-SAME: (%[[LHS:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[RHS:[a-zA-Z0-9_]+]]: memref<?x6xf32>, %[[OUT:[a-zA-Z0-9_]+]]: memref<2x4x3xf32>)
// CHECK-DAG: %[[C2:[a-zA-Z0-9_]+]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:[a-zA-Z0-9_]+]] = arith.constant 3 : index
// CHECK-DAG: %[[C4:[a-zA-Z0-9_]+]] = arith.constant 4 : index
// CHECK: %[[M:[a-zA-Z0-9_]+]] = memref.dim %[[LHS]]
// CHECK: scf.parallel (%[[H:[a-zA-Z0-9_]+]], %[[K:[a-zA-Z0-9_]+]]) = (%{{.*}}, %{{.*}}) to (%[[C2]], %[[C4]])
// CHECK: scf.parallel (%[[N:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[C3]])
// CHECK: %[[HK:[a-zA-Z0-9_]+]] = arith.muli %[[H]], %[[C4]]
// CHECK: %[[CL:[a-zA-Z0-9_]+]] = arith.addi %[[HK]], %[[K]]
// CHECK: %[[HN:[a-zA-Z0-9_]+]] = arith.muli %[[H]], %[[C3]]
// CHECK: %[[CR:[a-zA-Z0-9_]+]] = arith.addi %[[HN]], %[[N]]
// CHECK: %[[SUM:[a-zA-Z0-9_]+]] = scf.for %[[I:[a-zA-Z0-9_]+]] = %{{.*}} to %[[M]]
// CHECK: memref.load %[[LHS]][%[[I]], %[[CL]]]
// CHECK: memref.load %[[RHS]][%[[I]], %[[CR]]]
// CHECK: memref.store %[[SUM]], %[[OUT]][%[[H]], %[[K]], %[[N]]]
func.func @gemm_outer_product_per_head(%lhs: memref<?x8xf32>,
                                       %rhs: memref<?x6xf32>,
                                       %out: memref<2x4x3xf32>) {
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<?x6xf32>)
             out(%out : memref<2x4x3xf32>) {transpose_lhs}
  return
}

// -----

// COO: one iteration per edge e < size(src), as ceil(E / 256) groups of 256
// lanes (launch_bounds) with a guard; every edge scheme resolved from e
// (edge), compact_map[e], src[e], dst[e], etype[e] or 0 (whole); accumulates
// become atomics (add: addf, max: maximumf).
// CHECK-LABEL: func.func @traversal_coo
// CHECK-SAME: (%[[SRC:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[DST:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[ETY:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[a-zA-Z0-9_]+]]: memref<?xi64>, %[[Z:[a-zA-Z0-9_]+]]: memref<?x16xf32>, %[[A:[a-zA-Z0-9_]+]]: memref<?x16xf32>, %[[NORM:[a-zA-Z0-9_]+]]: memref<?xf32>, %[[X:[a-zA-Z0-9_]+]]: memref<?x16xf32>, %[[B:[a-zA-Z0-9_]+]]: memref<16xf32>, %[[SUM:[a-zA-Z0-9_]+]]: memref<?x16xf32>, %[[MAX:[a-zA-Z0-9_]+]]: memref<?x16xf32>)
// CHECK: %[[E:[a-zA-Z0-9_]+]] = memref.dim %[[SRC]], %{{.*}} : memref<?xi32>
// CHECK: %[[C256:[a-zA-Z0-9_]+]] = arith.constant 256 : index
// CHECK: %[[G:[a-zA-Z0-9_]+]] = arith.ceildivui %[[E]], %[[C256]] : index
// CHECK: scf.parallel (%[[BLK:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[G]])
// CHECK-NEXT: scf.parallel (%[[LANE:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[C256]])
// CHECK-NEXT: %[[BASE:[a-zA-Z0-9_]+]] = arith.muli %[[BLK]], %[[C256]] : index
// CHECK-NEXT: %[[EI:[a-zA-Z0-9_]+]] = arith.addi %[[BASE]], %[[LANE]] : index
// CHECK-NEXT: %[[IN:[a-zA-Z0-9_]+]] = arith.cmpi ult, %[[EI]], %[[E]] : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: %[[PR:[a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[EI]]] : memref<?xi64>
// CHECK: %[[PRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[PR]] : i64 to index
// CHECK: %[[TR:[a-zA-Z0-9_]+]] = memref.load %[[ETY]][%[[EI]]]
// CHECK: %[[TRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[TR]]
// CHECK: %[[SR:[a-zA-Z0-9_]+]] = memref.load %[[SRC]][%[[EI]]]
// CHECK: %[[SRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[SR]]
// CHECK: %[[DR:[a-zA-Z0-9_]+]] = memref.load %[[DST]][%[[EI]]]
// CHECK: %[[DRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[DR]]
// CHECK: memref.load %[[NORM]][%[[EI]]]
// CHECK: scf.for %[[F:[a-zA-Z0-9_]+]] =
// CHECK: memref.load %[[Z]][%[[PRI]], %[[F]]]
// CHECK: memref.load %[[A]][%[[TRI]], %[[F]]]
// CHECK: memref.load %[[X]][%[[SRI]], %[[F]]]
// CHECK: memref.load %[[B]][%[[F]]]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[SUM]][%[[DRI]], %[[F]]]
// CHECK: memref.atomic_rmw maximumf %{{.*}}, %[[MAX]][%[[DRI]], %[[F]]]
// CHECK: scf.reduce
// CHECK: return
func.func @traversal_coo(%src: memref<?xi32>, %dst: memref<?xi32>,
                         %ety: memref<?xi32>, %map: memref<?xi64>,
                         %z: memref<?x16xf32>, %a: memref<?x16xf32>,
                         %norm: memref<?xf32>, %x: memref<?x16xf32>,
                         %b: memref<16xf32>, %sum: memref<?x16xf32>,
                         %max: memref<?x16xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi64>)
      ins(%z : memref<?x16xf32> as compact, %a : memref<?x16xf32> as etype,
          %norm : memref<?xf32> as edge, %x : memref<?x16xf32> as src,
          %b : memref<16xf32> as whole)
      outs(%sum : memref<?x16xf32> as dst, %max : memref<?x16xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ra: index, %rn: index, %rx: index, %rb: index,
       %rs: index, %rm: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c16 step %c1 {
      %zv = memref.load %z[%rz, %f] : memref<?x16xf32>
      %av = memref.load %a[%ra, %f] : memref<?x16xf32>
      %xv = memref.load %x[%rx, %f] : memref<?x16xf32>
      %bv = memref.load %b[%f] : memref<16xf32>
      %p = arith.mulf %zv, %av : f32
      %q = arith.mulf %p, %c : f32
      %r = arith.addf %q, %xv : f32
      %v = arith.addf %r, %bv : f32
      htmpl.accumulate add %v, %sum[%rs, %f] : f32, memref<?x16xf32>
      htmpl.accumulate max %v, %max[%rm, %f] : f32, memref<?x16xf32>
    }
  }
  return
}

// -----

// Pair order: one iteration per slot k < size(src), whose edge is
// e = pair_eid[k]; then every scheme is resolved from e as in COO.
// CHECK-LABEL: func.func @traversal_pairs
// CHECK-SAME: (%[[SRC:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[DST:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[ETY:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[PEID:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[NORM:[a-zA-Z0-9_]+]]: memref<?xf32>, %[[G:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[SUM:[a-zA-Z0-9_]+]]: memref<?x8xf32>)
// CHECK: %[[E:[a-zA-Z0-9_]+]] = memref.dim %[[SRC]], %{{.*}} : memref<?xi32>
// CHECK: scf.parallel
// CHECK-NEXT: scf.parallel
// CHECK: %[[K:[a-zA-Z0-9_]+]] = arith.addi
// CHECK-NEXT: %[[IN:[a-zA-Z0-9_]+]] = arith.cmpi ult, %[[K]], %[[E]] : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: %[[EID:[a-zA-Z0-9_]+]] = memref.load %[[PEID]][%[[K]]]
// CHECK: %[[EIDI:[a-zA-Z0-9_]+]] = arith.index_cast %[[EID]]
// CHECK: %[[DR:[a-zA-Z0-9_]+]] = memref.load %[[DST]][%[[EIDI]]]
// CHECK: %[[DRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[DR]]
// CHECK: %[[PR:[a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[EIDI]]]
// CHECK: %[[PRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[PR]]
// CHECK: memref.load %[[NORM]][%[[EIDI]]]
// CHECK: scf.for %[[F:[a-zA-Z0-9_]+]] =
// CHECK: memref.load %[[G]][%[[DRI]], %[[F]]]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[SUM]][%[[PRI]], %[[F]]]
func.func @traversal_pairs(%src: memref<?xi32>, %dst: memref<?xi32>,
                           %ety: memref<?xi32>, %pair_eid: memref<?xi32>,
                           %map: memref<?xi32>, %norm: memref<?xf32>,
                           %g: memref<?x8xf32>, %sum: memref<?x8xf32>) {
  htmpl.traversal edges pairs(%src, %dst, %ety, %pair_eid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%norm : memref<?xf32> as edge, %g : memref<?x8xf32> as dst)
      outs(%sum : memref<?x8xf32> as compact) {
  ^bb0(%e: index, %rn: index, %rg: index, %rs: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c8 step %c1 {
      %gv = memref.load %g[%rg, %f] : memref<?x8xf32>
      %v = arith.mulf %gv, %c : f32
      htmpl.accumulate add %v, %sum[%rs, %f] : f32, memref<?x8xf32>
    }
  }
  return
}

// -----

// CSR: one iteration per destination node t < size(row_ptr) - 1 (groups of
// launch_bounds = 128 lanes) and an scf.for over its slots; edge id = eid[slot], compact row =
// compact_map[eid[slot]], src = csr_src[slot], dst = t, etype =
// csr_etype[slot]. Accumulates into the node's own (dst) row need no
// atomics; those into src rows keep them.
// CHECK-LABEL: func.func @traversal_csr
// CHECK-SAME: (%[[RP:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[CSRC:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[EID:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[CETY:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[MAP:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[Z:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[A:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[NORM:[a-zA-Z0-9_]+]]: memref<?xf32>, %[[SUM:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[MAX:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[BACK:[a-zA-Z0-9_]+]]: memref<?x8xf32>)
// CHECK: %[[LEN:[a-zA-Z0-9_]+]] = memref.dim %[[RP]]
// CHECK: %[[NM1:[a-zA-Z0-9_]+]] = arith.subi %[[LEN]], %{{.*}} : index
// CHECK: %[[NN:[a-zA-Z0-9_]+]] = arith.maxsi %[[NM1]], %{{.*}} : index
// CHECK: %[[C128:[a-zA-Z0-9_]+]] = arith.constant 128 : index
// CHECK: %[[G:[a-zA-Z0-9_]+]] = arith.ceildivui %[[NN]], %[[C128]] : index
// CHECK: scf.parallel (%[[BLK:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[G]])
// CHECK-NEXT: scf.parallel (%[[LANE:[a-zA-Z0-9_]+]]) = (%{{.*}}) to (%[[C128]])
// CHECK-NEXT: %[[BASE:[a-zA-Z0-9_]+]] = arith.muli %[[BLK]], %[[C128]] : index
// CHECK-NEXT: %[[T:[a-zA-Z0-9_]+]] = arith.addi %[[BASE]], %[[LANE]] : index
// CHECK-NEXT: %[[IN:[a-zA-Z0-9_]+]] = arith.cmpi ult, %[[T]], %[[NN]] : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: %[[B:[a-zA-Z0-9_]+]] = memref.load %[[RP]][%[[T]]]
// CHECK: %[[BI:[a-zA-Z0-9_]+]] = arith.index_cast %[[B]]
// CHECK: %[[T1:[a-zA-Z0-9_]+]] = arith.addi %[[T]], %{{.*}} : index
// CHECK: %[[E:[a-zA-Z0-9_]+]] = memref.load %[[RP]][%[[T1]]]
// CHECK: %[[EI:[a-zA-Z0-9_]+]] = arith.index_cast %[[E]]
// CHECK: scf.for %[[SLOT:[a-zA-Z0-9_]+]] = %[[BI]] to %[[EI]] step
// CHECK: %[[ID:[a-zA-Z0-9_]+]] = memref.load %[[EID]][%[[SLOT]]]
// CHECK: %[[IDI:[a-zA-Z0-9_]+]] = arith.index_cast %[[ID]]
// CHECK: %[[PR:[a-zA-Z0-9_]+]] = memref.load %[[MAP]][%[[IDI]]]
// CHECK: %[[PRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[PR]]
// CHECK: %[[TR:[a-zA-Z0-9_]+]] = memref.load %[[CETY]][%[[SLOT]]]
// CHECK: %[[TRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[TR]]
// CHECK: %[[SR:[a-zA-Z0-9_]+]] = memref.load %[[CSRC]][%[[SLOT]]]
// CHECK: %[[SRI:[a-zA-Z0-9_]+]] = arith.index_cast %[[SR]]
// CHECK: memref.load %[[NORM]][%[[IDI]]]
// CHECK: scf.for %[[F:[a-zA-Z0-9_]+]] =
// CHECK: memref.load %[[Z]][%[[PRI]], %[[F]]]
// CHECK: memref.load %[[A]][%[[TRI]], %[[F]]]
// CHECK: %[[OLD:[a-zA-Z0-9_]+]] = memref.load %[[SUM]][%[[T]], %[[F]]]
// CHECK: %[[NEW:[a-zA-Z0-9_]+]] = arith.addf %[[OLD]], %[[V:[a-zA-Z0-9_]+]] : f32
// CHECK: memref.store %[[NEW]], %[[SUM]][%[[T]], %[[F]]]
// CHECK: %[[OLDM:[a-zA-Z0-9_]+]] = memref.load %[[MAX]][%[[T]], %[[F]]]
// CHECK: %[[NEWM:[a-zA-Z0-9_]+]] = arith.maximumf %[[OLDM]], %[[V]] : f32
// CHECK: memref.store %[[NEWM]], %[[MAX]][%[[T]], %[[F]]]
// CHECK: memref.atomic_rmw addf %[[V]], %[[BACK]][%[[SRI]], %[[F]]]
func.func @traversal_csr(%rp: memref<?xi32>, %csrc: memref<?xi32>,
                         %eid: memref<?xi32>, %cety: memref<?xi32>,
                         %map: memref<?xi32>, %z: memref<?x8xf32>,
                         %a: memref<?x8xf32>, %norm: memref<?xf32>,
                         %sum: memref<?x8xf32>, %max: memref<?x8xf32>,
                         %back: memref<?x8xf32>) {
  htmpl.traversal edges csr(%rp, %csrc, %eid, %cety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%z : memref<?x8xf32> as compact, %a : memref<?x8xf32> as etype,
          %norm : memref<?xf32> as edge)
      outs(%sum : memref<?x8xf32> as dst, %max : memref<?x8xf32> as dst,
           %back : memref<?x8xf32> as src) launch_bounds(128) {
  ^bb0(%e: index, %rz: index, %ra: index, %rn: index, %rs: index, %rm: index,
       %rb: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %c8 step %c1 {
      %zv = memref.load %z[%rz, %f] : memref<?x8xf32>
      %av = memref.load %a[%ra, %f] : memref<?x8xf32>
      %p = arith.mulf %zv, %av : f32
      %v = arith.mulf %p, %c : f32
      htmpl.accumulate add %v, %sum[%rs, %f] : f32, memref<?x8xf32>
      htmpl.accumulate max %v, %max[%rm, %f] : f32, memref<?x8xf32>
      htmpl.accumulate add %v, %back[%rb, %f] : f32, memref<?x8xf32>
    }
  }
  return
}

// -----

// CSR accumulates stay atomic when another write reaches the same buffer at
// a non-dst row, when the buffer is also written through a view, or when a
// parallel loop inside the body encloses them. Only the edge id is used:
// no other graph array is read.
// CHECK-LABEL: func.func @traversal_csr_atomic
// CHECK-SAME: (%[[RP:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[CSRC:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[EID:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[CETY:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[X:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[Y:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[W:[a-zA-Z0-9_]+]]: memref<?x8xf32>)
// CHECK: scf.for %[[SLOT:[a-zA-Z0-9_]+]] =
// CHECK-NOT: memref.load %[[CSRC]]
// CHECK-NOT: memref.load %[[CETY]]
// CHECK: %[[ID:[a-zA-Z0-9_]+]] = memref.load %[[EID]][%[[SLOT]]]
// CHECK: %[[IDI:[a-zA-Z0-9_]+]] = arith.index_cast %[[ID]]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[X]][%{{.*}}, %{{.*}}]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[X]][%[[IDI]], %{{.*}}]
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[Y]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[IDI]], %{{.*}}]
// CHECK: scf.parallel
// CHECK: memref.atomic_rmw maximumf %{{.*}}, %[[W]]
func.func @traversal_csr_atomic(%rp: memref<?xi32>, %csrc: memref<?xi32>,
                                %eid: memref<?xi32>, %cety: memref<?xi32>,
                                %x: memref<?x8xf32>, %y: memref<?x8xf32>,
                                %w: memref<?x8xf32>) {
  %yv = memref.subview %y[0, 0] [4, 8] [1, 1] : memref<?x8xf32> to memref<4x8xf32, strided<[8, 1]>>
  htmpl.traversal edges csr(%rp, %csrc, %eid, %cety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%x : memref<?x8xf32> as dst, %y : memref<?x8xf32> as dst,
           %w : memref<?x8xf32> as dst) {
  ^bb0(%e: index, %rx: index, %ry: index, %rw: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %one = arith.constant 1.0 : f32
    htmpl.accumulate add %one, %x[%rx, %c0] : f32, memref<?x8xf32>
    htmpl.accumulate add %one, %x[%e, %c0] : f32, memref<?x8xf32>
    htmpl.accumulate add %one, %y[%ry, %c0] : f32, memref<?x8xf32>
    memref.store %one, %yv[%e, %c0] : memref<4x8xf32, strided<[8, 1]>>
    scf.parallel (%f) = (%c0) to (%c8) step (%c1) {
      htmpl.accumulate max %one, %w[%rw, %c0] : f32, memref<?x8xf32>
    }
  }
  return
}

// -----

// Integer accumulates: addi and maxs (atomics in COO order).
// CHECK-LABEL: func.func @traversal_integer
// CHECK: memref.atomic_rmw addi %{{.*}}, %{{.*}}[%{{.*}}] : (i32, memref<?xi32>) -> i32
// CHECK: memref.atomic_rmw maxs %{{.*}}, %{{.*}}[%{{.*}}] : (i64, memref<?xi64>) -> i64
func.func @traversal_integer(%src: memref<?xi32>, %dst: memref<?xi32>,
                             %ety: memref<?xi32>, %deg: memref<?xi32>,
                             %big: memref<?xi64>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%deg : memref<?xi32> as dst, %big : memref<?xi64> as dst) {
  ^bb0(%e: index, %rd: index, %rb: index):
    %one = arith.constant 1 : i32
    %ei = arith.index_cast %e : index to i64
    htmpl.accumulate add %one, %deg[%rd] : i32, memref<?xi32>
    htmpl.accumulate max %ei, %big[%rb] : i64, memref<?xi64>
  }
  return
}

// -----

// Node traversal with node_types: N = size(node_types); node row = n, ntype
// row = node_types[n], whole row = 0.
// CHECK-LABEL: func.func @traversal_nodes
// CHECK-SAME: (%[[NT:[a-zA-Z0-9_]+]]: memref<?xi32>, %[[X:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[W:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[M:[a-zA-Z0-9_]+]]: memref<?x8xf32>, %[[Y:[a-zA-Z0-9_]+]]: memref<?x8xf32>)
// CHECK: %[[N:[a-zA-Z0-9_]+]] = memref.dim %[[NT]], %{{.*}} : memref<?xi32>
// CHECK: %[[G:[a-zA-Z0-9_]+]] = arith.ceildivui %[[N]], %{{.*}} : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[G]])
// CHECK: scf.parallel
// CHECK: %[[I:[a-zA-Z0-9_]+]] = arith.addi
// CHECK: arith.cmpi ult, %[[I]], %[[N]]
// CHECK-DAG: %[[ZERO:[a-zA-Z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[TY:[a-zA-Z0-9_]+]] = memref.load %[[NT]][%[[I]]]
// CHECK: %[[TYI:[a-zA-Z0-9_]+]] = arith.index_cast %[[TY]]
// CHECK: memref.load %[[X]][%[[I]], %{{.*}}]
// CHECK: memref.load %[[W]][%[[TYI]], %{{.*}}]
// CHECK: memref.load %[[M]][%[[ZERO]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[I]], %{{.*}}]
func.func @traversal_nodes(%ntypes: memref<?xi32>, %x: memref<?x8xf32>,
                           %w: memref<?x8xf32>, %m: memref<?x8xf32>,
                           %y: memref<?x8xf32>) {
  htmpl.traversal nodes node_types(%ntypes : memref<?xi32>)
      ins(%x : memref<?x8xf32> as node, %w : memref<?x8xf32> as ntype,
          %m : memref<?x8xf32> as whole)
      outs(%y : memref<?x8xf32> as node) {
  ^bb0(%n: index, %rx: index, %rw: index, %rm: index, %ry: index):
    %c0 = arith.constant 0 : index
    %a = memref.load %x[%rx, %c0] : memref<?x8xf32>
    %b = memref.load %w[%rw, %c0] : memref<?x8xf32>
    %c = memref.load %m[%rm, %c0] : memref<?x8xf32>
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %c : f32
    memref.store %t, %y[%ry, %c0] : memref<?x8xf32>
  }
  return
}

// -----

// Without node_types, N is dim 0 of the first `node` operand (here the
// output; the `whole` input before it does not count).
// CHECK-LABEL: func.func @traversal_nodes_count_from_operand
// CHECK-SAME: (%[[B:[a-zA-Z0-9_]+]]: memref<?x4xf32>, %[[Y:[a-zA-Z0-9_]+]]: memref<?x4xf32>)
// CHECK: %[[N:[a-zA-Z0-9_]+]] = memref.dim %[[Y]], %{{.*}} : memref<?x4xf32>
// CHECK: arith.ceildivui %[[N]]
// CHECK: %[[I:[a-zA-Z0-9_]+]] = arith.addi
// CHECK: arith.cmpi ult, %[[I]], %[[N]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[I]], %{{.*}}]
func.func @traversal_nodes_count_from_operand(%b: memref<?x4xf32>,
                                              %y: memref<?x4xf32>) {
  htmpl.traversal nodes ins(%b : memref<?x4xf32> as whole)
      outs(%y : memref<?x4xf32> as node) {
  ^bb0(%n: index, %rb: index, %ry: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %b[%rb, %c0] : memref<?x4xf32>
    memref.store %v, %y[%ry, %c0] : memref<?x4xf32>
  }
  return
}

// -----

// A traversal nested in another's body is lowered first (inner loop nest
// inside the outer one).
// CHECK-LABEL: func.func @traversal_nested
// CHECK-COUNT-2: scf.parallel
// CHECK: scf.if
// CHECK-COUNT-2: scf.parallel
// CHECK: scf.if
// CHECK: memref.atomic_rmw addf
func.func @traversal_nested(%src: memref<?xi32>, %dst: memref<?xi32>,
                            %ety: memref<?xi32>, %y: memref<?xf32>,
                            %z: memref<?xf32>) {
  htmpl.traversal nodes outs(%y : memref<?xf32> as node) {
  ^bb0(%n: index, %ry: index):
    htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
        outs(%z : memref<?xf32> as dst) {
    ^bb0(%e: index, %rz: index):
      %v = memref.load %y[%ry] : memref<?xf32>
      htmpl.accumulate add %v, %z[%rz] : f32, memref<?xf32>
    }
  }
  return
}
