// The example generator's width and head parameters give verified models.

// RUN: %python %hector_src_root/examples/generate.py rgcn --width 16 --out-width 128 | hectorc - | FileCheck %s --check-prefix=RGCN
// RUN: %python %hector_src_root/examples/generate.py rgat --width 32 --heads 4 | hectorc - | FileCheck %s --check-prefix=RGAT4
// RUN: %python %hector_src_root/examples/generate.py rgat --width 128 --out-width 64 --heads 8 | hectorc - | FileCheck %s --check-prefix=RGAT8
// RUN: %python %hector_src_root/examples/generate.py hgt --width 128 --heads 4 | hectorc - | FileCheck %s --check-prefix=HGT
// RUN: %python %hector_src_root/examples/generate.py hgt --width 16 --heads 16 | hectorc - | FileCheck %s --check-prefix=HGT16
// RUN: not %python %hector_src_root/examples/generate.py rgat --width 30 --heads 4 2>&1 | FileCheck %s --check-prefix=BADHEADS

// RGCN-LABEL: hgraph.func @rgcn
// RGCN: -> !hgraph.node<128xf32>
// RGCN: hgraph.typed_linear {{.*}} : !hgraph.weight<edge, 16x128xf32>, !hgraph.node<16xf32> -> !hgraph.edge<128xf32>

// RGAT4-LABEL: hgraph.func @rgat
// RGAT4: hgraph.dot {{.*}} : !hgraph.edge<32xf32, heads = 4> -> !hgraph.edge<4xf32, heads = 4>
// RGAT4: hgraph.aggregate sum {{.*}} -> !hgraph.node<32xf32, heads = 4>

// RGAT8-LABEL: hgraph.func @rgat
// RGAT8: !hgraph.weight<edge, 128x64xf32>
// RGAT8: hgraph.edge_softmax {{.*}} : !hgraph.edge<8xf32, heads = 8>

// HGT-LABEL: hgraph.func @hgt
// HGT: !hgraph.weight<edge, 4x32x32xf32>
// HGT: hgraph.const_scale {{.*}} by 0.17677669529663687
// HGT: -> !hgraph.node<128xf32>

// HGT16-LABEL: hgraph.func @hgt
// HGT16: !hgraph.weight<edge, 16x1x1xf32>
// HGT16: hgraph.const_scale {{.*}} by 1.000000e+00

// BADHEADS: --heads 4 must divide the widths
