// hectorc --offload runs hgraph-offload-scheduling after the hgraph
// optimisations of a training build; the plan shows at --emit=hgraph, and
// the library's manifest lists the values its entries move. A CPU library
// with moved values links the runtime (the tensor cache), copied beside it.

// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=host --emit=hgraph | FileCheck %s --check-prefix=HOST
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --emit=hgraph | FileCheck %s --check-prefix=AUTO
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=none --emit=hgraph | FileCheck %s --check-prefix=AUTO
// RUN: rm -rf %t && mkdir -p %t
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=disk --target=cpu -o %t/librgat.so
// RUN: FileCheck %s --check-prefix=LIB < %t/librgat.so.json
// RUN: test -e %t/libhector_runtime.so
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --offload=host --emit=hgraph 2>&1 | FileCheck %s --check-prefix=TRAIN
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=gpu --emit=hgraph 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-capacity-mib=-1 --emit=hgraph 2>&1 | FileCheck %s --check-prefix=CAP
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-capacity-mib=600 --graph-sizes=N=100000,E=2000000,P=2000000 --emit=hgraph | FileCheck %s --check-prefix=RATES-DEFAULT
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-capacity-mib=600 --graph-sizes=N=100000,E=2000000,P=2000000 --offload-rates=device-gbps=20,gemm-tflops=0.01 --emit=hgraph 2>/dev/null | FileCheck %s --check-prefix=RATES-SLOW
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=gemm-tflops=0 --emit=hgraph 2>&1 | FileCheck %s --check-prefix=BADRATE

// RGAT saves α and the compact z: both leave after the forward's last
// reader and come back through their slots.
// HOST-LABEL: hgraph.func @rgat_fwd
// HOST-DAG: hgraph.evict %{{.*}} to host slot 0 : !hgraph.edge<1xf32>
// HOST-DAG: hgraph.evict %{{.*}} to host slot 1 : !hgraph.edge<64xf32>
// HOST-LABEL: hgraph.func @rgat_bwd
// HOST-DAG: hgraph.prefetch %{{.*}} slot 0
// HOST-DAG: hgraph.prefetch %{{.*}} slot 1

// Without a capacity, auto moves only what hides in its idle period: in
// one layer, nothing.
// AUTO-NOT: hgraph.evict

// LIB-LABEL: "name": "rgat_fwd"
// LIB: "offload": [
// LIB: "name": "saved1",
// LIB-NEXT: "direction": "evict",
// LIB-NEXT: "slot": 1,
// LIB-NEXT: "tier": "disk",
// LIB-LABEL: "name": "rgat_bwd"
// LIB: "offload": [
// LIB: "direction": "prefetch",
// TRAIN: hectorc: error: --offload plans a training step: add --training
// MODE: hectorc: error: --offload must be none, host, disk or auto
// CAP: hectorc: error: --offload-capacity-mib must be non-negative

// The planner's rates: at the default (H100) ones, recomputing z in the
// backward is cheaper than its round trip to host memory; on a machine that
// computes slowly (measured rates given with --offload-rates) z is moved.
// RATES-DEFAULT-LABEL: hgraph.func @rgat_fwd
// RATES-DEFAULT-NOT: to host slot 1
// RATES-DEFAULT-LABEL: hgraph.func @rgat_bwd
// RATES-DEFAULT: hgraph.typed_linear %arg2, %arg1 from src
// RATES-SLOW-LABEL: hgraph.func @rgat_fwd
// RATES-SLOW: hgraph.evict %{{.*}} to host slot 1
// BADRATE: hectorc: error: --offload-rates: expected {{.*}} with a positive number, got 'gemm-tflops=0'
