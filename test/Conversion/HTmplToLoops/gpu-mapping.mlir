// RUN: hector-opt %S/htmpl-to-loops.mlir --split-input-file --htmpl-to-loops \
// RUN:   --gpu-map-parallel-loops --convert-parallel-loops-to-gpu --canonicalize \
// RUN: | FileCheck %s

// The loop nests are shaped for the GPU backend: with only the upstream
// mapping passes, every instance of htmpl-to-loops.mlir becomes gpu.launch
// with its outer scf.parallel on blocks and its nested scf.parallel on
// threads (GEMM row mode: a block per row, a thread per output column;
// outer-product mode: a block per weight row, a thread per column;
// traversals: launch_bounds threads per block). No launch is left at one
// thread per block.

// CHECK-LABEL: func.func @gemm_plain(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_typed_gather(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_scatter_atomic(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_scatter_atomic_overwrite(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_accumulate(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_transpose_rhs(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c8, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_per_head(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_outer_product(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @gemm_outer_product_per_head(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c3, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_coo(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_csr(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_csr_atomic(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_integer(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_nodes(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_nodes_count_from_operand(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-LABEL: func.func @traversal_nested(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)

// CHECK-NOT: gpu.launch
