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
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-capacity-mib=600 --graph-sizes=N=100000,E=2000000,P=2000000 --offload-rates=disk-read-gbps=1.78,gemm-tflops=1e-2,host-write-gbps=53.1,device-gbps=20,host-read-gbps=54.6,disk-write-gbps=3.05 --emit=hgraph 2>/dev/null | FileCheck %s --check-prefix=RATES-SLOW
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=device-gbps=20,pcie-gbps=50 --emit=hgraph 2>&1 | FileCheck %s --check-prefix=UNKNOWN-RATE
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=device-gbps --emit=hgraph 2>&1 | FileCheck %s --check-prefix=NO-VALUE
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=device-gbps=abc --emit=hgraph 2>&1 | FileCheck %s --check-prefix=BAD-NUMBER
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=host-read-gbps=5x --emit=hgraph 2>&1 | FileCheck %s --check-prefix=TRAILING
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=device-gbps=20,gemm-tflops=1,device-gbps=30 --emit=hgraph 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=gemm-tflops=0 --emit=hgraph 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=disk-write-gbps=-3 --emit=hgraph 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=disk-read-gbps=inf --emit=hgraph 2>&1 | FileCheck %s --check-prefix=INFINITE
// RUN: not hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-rates=host-write-gbps=nan --emit=hgraph 2>&1 | FileCheck %s --check-prefix=NAN
//
// The registered pipelines take the rates as typed options: hectorc's
// --offload-rates sets them (same plan), MLIR's option parser refuses a
// malformed number, and the pass a zero one.
// RUN: hector-opt %hector_src_root/examples/rgat.mlir --hector-cpu-pipeline="training=true offload=auto offload-capacity-mib=600 num-nodes=100000 num-edges=2000000 num-pairs=2000000 offload-device-gbps=20 offload-gemm-tflops=0.01 stop-after=hgraph" > %t/slow.opt.mlir
// RUN: hectorc %hector_src_root/examples/rgat.mlir --training --offload=auto --offload-capacity-mib=600 --graph-sizes=N=100000,E=2000000,P=2000000 --offload-rates=device-gbps=20,gemm-tflops=0.01 --emit=hgraph > %t/slow.hectorc.mlir
// RUN: diff %t/slow.opt.mlir %t/slow.hectorc.mlir
// RUN: FileCheck %s --check-prefix=RATES-SLOW --input-file=%t/slow.opt.mlir
// RUN: not hector-opt %hector_src_root/examples/rgat.mlir --hector-cpu-pipeline="training=true offload=auto offload-device-gbps=abc" 2>&1 | FileCheck %s --check-prefix=PIPELINE-BAD-NUMBER
// RUN: not hector-opt %hector_src_root/examples/rgat.mlir --hector-cuda-pipeline="training=true offload=auto offload-gemm-tflops=fast stop-after=hgraph" 2>&1 | FileCheck %s --check-prefix=PIPELINE-BAD-NUMBER-CUDA
// RUN: not hector-opt %hector_src_root/examples/rgat.mlir --hector-cpu-pipeline="training=true offload=auto offload-host-read-gbps=0 stop-after=hgraph" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=PIPELINE-ZERO
// RUN: not hector-opt %hector_src_root/examples/rgat.mlir --hector-cuda-pipeline="offload-rates=device-gbps=abc" 2>&1 | FileCheck %s --check-prefix=PIPELINE-TEXT

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

// UNKNOWN-RATE: hectorc: error: --offload-rates: unknown rate 'pcie-gbps' in 'pcie-gbps=50'; expected device-gbps, gemm-tflops, host-write-gbps, host-read-gbps, disk-write-gbps or disk-read-gbps
// NO-VALUE: hectorc: error: --offload-rates: device-gbps must be a positive, finite number, got ''
// BAD-NUMBER: hectorc: error: --offload-rates: device-gbps must be a positive, finite number, got 'abc'
// TRAILING: hectorc: error: --offload-rates: host-read-gbps must be a positive, finite number, got '5x'
// TWICE: hectorc: error: --offload-rates: device-gbps is given twice
// ZERO: hectorc: error: --offload-rates: gemm-tflops must be a positive, finite number, got '0'
// NEGATIVE: hectorc: error: --offload-rates: disk-write-gbps must be a positive, finite number, got '-3'
// INFINITE: hectorc: error: --offload-rates: disk-read-gbps must be a positive, finite number, got 'inf'
// NAN: hectorc: error: --offload-rates: host-write-gbps must be a positive, finite number, got 'nan'
// PIPELINE-BAD-NUMBER: for the --offload-device-gbps option: 'abc' value invalid for floating point argument!
// PIPELINE-BAD-NUMBER-CUDA: for the --offload-gemm-tflops option: 'fast' value invalid for floating point argument!
// PIPELINE-ZERO: error: hgraph-offload-scheduling: host-read-gbps must be a positive, finite number; got 0
// The text option of before is gone (it kept the defaults on a bad rate).
// PIPELINE-TEXT: no such option offload-rates
