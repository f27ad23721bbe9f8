// hectorc's work is linear in the size of its input (issue 16): shared
// subexpressions are evaluated once, no walk recurses once per op, fused
// traversal bodies are bounded, and widths are limited. Each program below
// hung hectorc (2^depth re-expansions), or overflowed its stack, before;
// each now takes about a second (the limit is 60 s).

// A chain of `add %v, %v` 16 deep, and 12 steps of x * sigmoid(x):
// forward and training, CPU libraries and CUDA up to the GPU dialect.
// RUN: %python %hector_src_root/test/long_programs.py add 16 > %t.add.mlir
// RUN: timeout 60 hectorc %t.add.mlir --target=cpu -o %t.add.so
// RUN: timeout 60 hectorc %t.add.mlir --training --target=cpu -o %t.add-training.so
// RUN: timeout 60 hectorc %t.add.mlir --target=cuda --emit=gpu -o /dev/null
// RUN: timeout 60 hectorc %t.add.mlir --training --target=cuda --emit=gpu -o /dev/null
// RUN: %python %hector_src_root/test/long_programs.py swish 12 > %t.swish.mlir
// RUN: timeout 60 hectorc %t.swish.mlir --target=cpu -o %t.swish.so
// RUN: timeout 60 hectorc %t.swish.mlir --training --target=cpu -o %t.swish-training.so
// RUN: timeout 60 hectorc %t.swish.mlir --target=cuda --emit=gpu -o /dev/null
// RUN: timeout 60 hectorc %t.swish.mlir --training --target=cuda --emit=gpu -o /dev/null

// 100,000 row-wise ops in one chain, the last marked compact (the verifier
// checks the whole chain), forward and training, through the lowering.
// RUN: %python %hector_src_root/test/long_programs.py chain 100000 --compact > %t.chain.mlir
// RUN: timeout 60 hectorc %t.chain.mlir --emit=htmpl -o /dev/null
// RUN: timeout 60 hectorc %t.chain.mlir --training --emit=htmpl -o /dev/null

// 30,000 maps `typed_linear %W, %v from edge` in a chain: compaction marks
// each one and hands the saved ones to the backward, whose gradient is a
// chain of 30,000 maps (quadratic time and memory before: killed).
// RUN: %python %hector_src_root/test/long_programs.py linear 30000 > %t.linear.mlir
// RUN: timeout 60 hectorc %t.linear.mlir --training --emit=htmpl -o /dev/null

// A width of 2^20 is refused at once, where it is written.
// RUN: not hectorc %s --target=cpu -o %t.wide.so 2>&1 | FileCheck %s
// CHECK: compile-time.mlir:[[@LINE+2]]:19: error: hgraph-to-htmpl: feature width 1048576 exceeds 16384, the largest Hector compiles (docs/compilation.md#limits)
hgraph.func @wide(%g: !hgraph.graph,
                  %h: !hgraph.node<1048576xf32>) -> !hgraph.node<1048576xf32> {
  %e = hgraph.gather %h from src : !hgraph.node<1048576xf32> -> !hgraph.edge<1048576xf32>
  %a = hgraph.aggregate sum %e : !hgraph.edge<1048576xf32> -> !hgraph.node<1048576xf32>
  hgraph.return %a : !hgraph.node<1048576xf32>
}
