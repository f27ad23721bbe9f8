// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s
// RUN: hector-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD

// Round trip of hgraph.dropout and !hgraph.seed; p = 0 folds to the input.

// CHECK-LABEL: hgraph.func @dropout
// CHECK-SAME: %{{.*}}: !hgraph.seed
// CHECK: hgraph.dropout %{{.*}}, %{{.*}} p 3.000000e-01 : !hgraph.edge<4xf32, heads = 4>
// CHECK: hgraph.dropout %{{.*}}, %{{.*}} p 1.000000e+00 : !hgraph.edge<8xf32>
hgraph.func @dropout(%g: !hgraph.graph, %a: !hgraph.edge<4xf32, heads = 4>,
                     %x: !hgraph.edge<8xf32>, %s: !hgraph.seed)
    -> (!hgraph.edge<4xf32, heads = 4>, !hgraph.edge<8xf32>) {
  %0 = hgraph.dropout %a, %s p 3.000000e-01 : !hgraph.edge<4xf32, heads = 4>
  %1 = hgraph.dropout %x, %s p 1.000000e+00 : !hgraph.edge<8xf32>
  hgraph.return %0, %1 : !hgraph.edge<4xf32, heads = 4>, !hgraph.edge<8xf32>
}

// FOLD-LABEL: hgraph.func @keep_all
// FOLD-SAME: (%{{.*}}: !hgraph.graph, %[[A:.*]]: !hgraph.edge<2xf32, heads = 2>
// FOLD-NOT: hgraph.dropout
// FOLD: hgraph.return %[[A]]
hgraph.func @keep_all(%g: !hgraph.graph, %a: !hgraph.edge<2xf32, heads = 2>,
                      %s: !hgraph.seed) -> !hgraph.edge<2xf32, heads = 2> {
  %0 = hgraph.dropout %a, %s p 0.000000e+00 : !hgraph.edge<2xf32, heads = 2>
  hgraph.return %0 : !hgraph.edge<2xf32, heads = 2>
}
