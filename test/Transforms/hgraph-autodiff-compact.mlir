// RUN: hector-opt %s -hgraph-autodiff='wrt=h' | FileCheck %s
// RUN: hector-opt %s -hgraph-autodiff='wrt=h' -hgraph-to-htmpl | FileCheck %s --check-prefix=ABI

// Compact arguments and results (one row per unique (source, edge type)
// pair) keep that layout in the training functions, as in the primal: @f_fwd
// returns the compact result compact, and @f_bwd reads the compact argument
// and takes the compact result's (unused) cotangent one row per pair. Found
// by test/python/program_generator.py: both used to be one row per edge,
// another ABI than @f's for the same names.

// CHECK-LABEL: hgraph.func @f_fwd(
// CHECK-SAME:    -> (!hgraph.node<4xf32> {hgraph.name = "result0", hgraph.role = "output"}, !hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>, hgraph.name = "result1", hgraph.role = "output"})
// CHECK-LABEL: hgraph.func @f_bwd(
// CHECK-SAME:    %{{.*}}: !hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>, hgraph.name = "x"}
// CHECK-SAME:    %{{.*}}: !hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>, hgraph.name = "d_result1", hgraph.role = "grad_output"}

// ABI-LABEL: func.func @f_fwd(
// ABI-SAME:    {hector.arg = {name = "x", role = "input", shape = ["P", 4]}}
// ABI-SAME:    {hector.arg = {name = "result1", role = "output", shape = ["P", 4]}}
// ABI-LABEL: func.func @f_bwd(
// ABI-SAME:    {hector.arg = {name = "x", role = "input", shape = ["P", 4]}}
// ABI-SAME:    {hector.arg = {name = "d_result1", role = "grad_output", shape = ["P", 4]}}
hgraph.func @f(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {hgraph.name = "h"},
               %x: !hgraph.edge<4xf32> {hgraph.name = "x", hgraph.materialization = #hgraph.materialization<compact>})
    -> (!hgraph.node<4xf32>, !hgraph.edge<4xf32> {hgraph.materialization = #hgraph.materialization<compact>}) {
  %s = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %m = hgraph.mul %s, %x : !hgraph.edge<4xf32>
  %o = hgraph.aggregate sum %m : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  // Depends on x only, which is not differentiated.
  %y = hgraph.tanh %x : !hgraph.edge<4xf32>
  hgraph.return %o, %y : !hgraph.node<4xf32>, !hgraph.edge<4xf32>
}
