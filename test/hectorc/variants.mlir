// hectorc --variant picks the hgraph-level optimisations (default: both);
// --graph-sizes feeds their profitability decisions; --typed-endpoints lets
// reordering multiply node-typed and edge-typed weights.

// RUN: hectorc %s --variant=unopt | FileCheck %s --check-prefix=UNOPT
// RUN: hectorc %s --variant=compact | FileCheck %s --check-prefix=COMPACT
// RUN: hectorc %s --variant=reorder | FileCheck %s --check-prefix=REORDER
// RUN: hectorc %s | FileCheck %s --check-prefix=BOTH
// RUN: hectorc %s --variant=both --typed-endpoints | FileCheck %s --check-prefix=TYPED
// RUN: hectorc %s --typed-endpoints --graph-sizes=N=500,R=100 | FileCheck %s --check-prefix=FEWNODES
// RUN: hectorc %s --target=cpu -o %t.so && FileCheck %s --check-prefix=LIB < %t.so.json
// RUN: hectorc %s --target=cpu --typed-endpoints -o %t.typed.so && FileCheck %s --check-prefix=TYPEDLIB < %t.typed.so.json
// RUN: hectorc %s --target=cpu --training --typed-endpoints -o %t.train.so && FileCheck %s --check-prefix=TYPEDTRAIN < %t.train.so.json
// RUN: hectorc %s --variant=compact --typed-endpoints --emit=loops -o %t.loops.mlir
// RUN: hectorc %t.loops.mlir --target=cpu -o %t.loops.so && FileCheck %s --check-prefix=TYPEDLIB < %t.loops.so.json
// RUN: not hectorc %s --graph-sizes=N=10,X=3 2>&1 | FileCheck %s --check-prefix=BADSYM
// RUN: not hectorc %s --graph-sizes=N=0 2>&1 | FileCheck %s --check-prefix=BADSIZE
// RUN: not hectorc %s --graph-sizes=E=5,E=6 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not hectorc %s --variant=fast 2>&1 | FileCheck %s --check-prefix=BADVARIANT
// RUN: hectorc --help | FileCheck %s --check-prefix=HELP

// UNOPT-LABEL: hgraph.func @layer
// UNOPT-NOT: weight_product
// UNOPT-NOT: materialization

// COMPACT-LABEL: hgraph.func @layer
// COMPACT-NOT: weight_product
// COMPACT: typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge
// COMPACT-NOT: weight_product

// REORDER-LABEL: hgraph.func @layer
// REORDER-NOT: materialization
// REORDER: hgraph.weight_product {{.*}} : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32>
// REORDER-NOT: materialization

// BOTH-LABEL: hgraph.func @layer
// BOTH: typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge
// BOTH: hgraph.weight_product {{.*}} : !hgraph.weight<edge, 16x16xf32>, !hgraph.weight<edge, 16xf32>
// BOTH-NOT: node_of

// TYPED-LABEL: hgraph.func @layer
// TYPED: hgraph.weight_product {{.*}} node_of src
// TYPED: hgraph.typed_linear {{.*}} from src {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 16x16xf32>

// With 500 nodes and 100 edge types, the per-node K GEMM (N·d·d) is cheaper
// than the per-type product (R·d·d·d).
// FEWNODES-LABEL: hgraph.func @layer
// FEWNODES-NOT: node_of

// The library needs the compact mapping; only a library whose code picks
// weights through an edge type's endpoint type says typed_endpoints (and
// hector.compiled then checks every graph it is called with).
// LIB: "compact_map"
// LIB-NOT: typed_endpoints
// TYPEDLIB: "kind": "inference"
// TYPEDLIB: "typed_endpoints": true

// Every entry of a library built with --typed-endpoints says so, whether or
// not its own code multiplies through an endpoint's type (the training
// entries here do not; with --variant=compact none does), and the mark
// survives a round trip through --emit=loops.
// TYPEDTRAIN: "name": "layer",
// TYPEDTRAIN: "primal": "layer",
// TYPEDTRAIN-NEXT: "typed_endpoints": true
// TYPEDTRAIN: "name": "layer_fwd",
// TYPEDTRAIN: "primal": "layer",
// TYPEDTRAIN-NEXT: "typed_endpoints": true
// TYPEDTRAIN: "name": "layer_bwd",
// TYPEDTRAIN: "primal": "layer",
// TYPEDTRAIN-NEXT: "typed_endpoints": true

// BADSYM: hectorc: error: --graph-sizes: unknown symbol 'X' in 'X=3'; expected N=<count>,E=<count>,P=<count>,R=<count>,T=<count> (any subset, positive counts)
// BADSIZE: hectorc: error: --graph-sizes: N must be a positive count, got '0'
// TWICE: hectorc: error: --graph-sizes: E is given twice
// BADVARIANT: Cannot find option named 'fast'
// HELP: --graph-sizes=<N=..,E=..,P=..,R=..,T=..>
// HELP: --typed-endpoints
// HELP: --variant=<value>
// HELP: =unopt
// HELP: =both

hgraph.func @layer(%g: !hgraph.graph, %h: !hgraph.node<16xf32> {hgraph.name = "h"},
                   %W: !hgraph.weight<edge, 16x16xf32>, %a: !hgraph.weight<edge, 16xf32>, %b: !hgraph.weight<edge, 16xf32>,
                   %K: !hgraph.weight<node, 16x16xf32>, %Watt: !hgraph.weight<edge, 16x16xf32>) -> (!hgraph.node<16xf32>, !hgraph.edge<16xf32>) {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 16xf32> -> !hgraph.edge<16xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<16xf32> -> !hgraph.edge<1xf32>
  %score = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<16xf32> -> !hgraph.edge<16xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<16xf32> -> !hgraph.node<16xf32>
  %k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.node<16xf32>
  %katt = hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 16x16xf32>, !hgraph.node<16xf32> -> !hgraph.edge<16xf32>
  hgraph.return %out, %katt : !hgraph.node<16xf32>, !hgraph.edge<16xf32>
}
