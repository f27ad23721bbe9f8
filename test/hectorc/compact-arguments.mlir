// RUN: hectorc %s --emit=htmpl | FileCheck %s
// RUN: hector-opt %s | FileCheck %s --check-prefix=VERIFY

// An edge-wise argument marked compact holds one row per unique (source,
// edge type) pair, so row math on it depends only on the source and the
// edge type too: it may be returned compact, or marked compact. Found by
// test/python/program_generator.py: both used to be rejected ("must depend
// only on the source node and the edge type").

// CHECK-LABEL: func.func @f(
// CHECK-SAME:    {hector.arg = {name = "x", role = "input", shape = ["P", 4]}}
// CHECK-SAME:    {hector.arg = {name = "result0", role = "output", shape = ["P", 4]}}
// CHECK-SAME:    {hector.arg = {name = "result1", role = "output", shape = ["E", 4]}}
// VERIFY: hgraph.tanh {{.*}} {hgraph.materialization = #hgraph.materialization<compact>}
hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
               %x: !hgraph.edge<4xf32> {hgraph.name = "x", hgraph.materialization = #hgraph.materialization<compact>})
    -> (!hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>}, !hgraph.edge<4xf32>) {
  %s = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.tanh %x {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<4xf32>
  %y = hgraph.add %s, %t : !hgraph.edge<4xf32>
  hgraph.return %y, %y : !hgraph.edge<4xf32>, !hgraph.edge<4xf32>
}
