// The committed examples parse, verify and print at the hgraph stage
// (unoptimised), and are exactly what examples/generate.py writes with its
// defaults.

// RUN: hectorc %hector_src_root/examples/rgcn.mlir --emit=hgraph --variant=unopt | FileCheck %s --check-prefix=RGCN
// RUN: hectorc %hector_src_root/examples/rgat.mlir --emit=hgraph --variant=unopt | FileCheck %s --check-prefix=RGAT
// RUN: hectorc %hector_src_root/examples/hgt.mlir --emit=hgraph --variant=unopt | FileCheck %s --check-prefix=HGT
// RUN: %python %hector_src_root/examples/generate.py rgcn | diff - %hector_src_root/examples/rgcn.mlir
// RUN: %python %hector_src_root/examples/generate.py rgat | diff - %hector_src_root/examples/rgat.mlir
// RUN: %python %hector_src_root/examples/generate.py hgt | diff - %hector_src_root/examples/hgt.mlir

// RGCN-LABEL: hgraph.func @rgcn
// RGCN: hgraph.typed_linear {{.*}} from src : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
// RGCN: hgraph.relation_norm
// RGCN: hgraph.scale
// RGCN: hgraph.aggregate sum
// RGCN: hgraph.typed_linear {{.*}} from node : !hgraph.weight<single, 64x64xf32>
// RGCN: hgraph.add

// RGAT-LABEL: hgraph.func @rgat
// RGAT-COUNT-2: hgraph.typed_linear
// RGAT-COUNT-2: hgraph.typed_vector
// RGAT-COUNT-2: hgraph.dot
// RGAT: hgraph.leaky_relu {{.*}} alpha 2.000000e-01
// RGAT: hgraph.edge_softmax
// RGAT: hgraph.scale
// RGAT: hgraph.aggregate sum

// HGT-LABEL: hgraph.func @hgt
// HGT-COUNT-4: hgraph.typed_linear
// HGT: hgraph.gather {{.*}} from dst
// HGT: hgraph.dot
// HGT: hgraph.typed_vector
// HGT: hgraph.mul
// HGT: hgraph.const_scale {{.*}} by 1.250000e-01
// HGT: hgraph.edge_softmax
