// hectorc reports malformed models as located diagnostics with a non-zero
// exit status; `not` also fails if hectorc crashes instead.

// RUN: not hectorc %s 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not hectorc %s --emit=hgraph -o %t.out 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not test -e %t.out
// RUN: cat %s | not hectorc - 2>&1 | FileCheck %s --check-prefix=STDIN
// RUN: not hectorc %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'hgraph.func @f(%%g: !hgraph.graph' | not hectorc - 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: echo 'hgraph.func @f(%%g: !hgraph.graph, %%h: !hgraph.node<8xf32, heads = 3>) { hgraph.return }' | not hectorc - 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not hectorc %s --emit=cubin 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: hectorc --help | FileCheck %s --check-prefix=HELP

// VERIFY: errors.mlir:[[@LINE+3]]:8: error: 'hgraph.aggregate' op reduces the incoming edges of each node; its input must be edge-wise, got node-wise '!hgraph.node<8xf32>'
// STDIN: <stdin>:[[@LINE+2]]:8: error: 'hgraph.aggregate' op reduces
hgraph.func @aggregate_nodes(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) -> !hgraph.node<8xf32> {
  %0 = hgraph.aggregate sum %h : !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %0 : !hgraph.node<8xf32>
}

// MISSING: hectorc: error: {{.*}}does-not-exist.mlir
// SYNTAX: <stdin>:1:{{[0-9]+}}: error:
// TYPE: <stdin>:1:{{[0-9]+}}: error: head count 3 does not divide the feature width 8
// STAGE: Cannot find option named 'cubin'
// HELP: USAGE: hectorc [options] <model.mlir | - for stdin>
// HELP: --emit=<value>
// HELP: =hgraph
// HELP: -o <file>
