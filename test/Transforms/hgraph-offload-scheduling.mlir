// The schedule of a two-layer RGAT training step (autodiff builds the pair;
// each layer saves z, its softmax α and the scores α normalises). Sizes:
// N = 1e5, E = P = 2e6, so z (32*E bytes) is 61 MiB and the step's peak
// with everything kept is 230.5 MiB, what the lowering allocates there: the
// 158.7 MiB of saved values (the caller's for the whole step), and in the
// backward the per-edge rows the first layer's input gradient reads (61
// MiB; no pairs without compaction), its softmax-gradient coefficient
// (E floats, stored once by the fusion plan: its scores' gradient and
// per-node sum are freed once it is) and a node buffer (after the pass has
// moved the weight gradients up to their operands, which frees each
// layer's per-edge gradients early).
//
// RUN: hector-opt %s -hgraph-autodiff -hgraph-offload-scheduling='mode=host min-kib=0 num-nodes=100000 num-edges=2000000 num-pairs=2000000' | FileCheck %s --check-prefix=HOST
// The verifier re-checks the plan when it is read back: nothing reads a
// stored value but its prefetch, nothing reads an evicted value after its
// evict.
// RUN: hector-opt %s -hgraph-autodiff -hgraph-offload-scheduling='mode=host min-kib=0 num-nodes=100000 num-edges=2000000 num-pairs=2000000' | hector-opt | FileCheck %s --check-prefix=HOST
// RUN: hector-opt %s -hgraph-autodiff -hgraph-offload-scheduling='mode=auto capacity-mib=200 num-nodes=100000 num-edges=2000000 num-pairs=2000000 report=true' --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: hector-opt %s -hgraph-autodiff -hgraph-offload-scheduling='mode=auto capacity-mib=160 num-nodes=100000 num-edges=2000000 num-pairs=2000000 device-gbps=20 gemm-tflops=0.01 report=true' --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SLOW
// RUN: hector-opt %s -hgraph-autodiff -hgraph-offload-scheduling='mode=auto capacity-mib=160 host-capacity-mib=10 num-nodes=100000 num-edges=2000000 num-pairs=2000000 device-gbps=20 gemm-tflops=0.01 report=true' --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=DISK
// RUN: hector-opt %s -hgraph-autodiff -hgraph-offload-scheduling='mode=none' | FileCheck %s --check-prefix=NONE
// RUN: not hector-opt %s -hgraph-offload-scheduling='mode=gpu' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hector-opt %s -hgraph-offload-scheduling='device-gbps=0' 2>&1 | FileCheck %s --check-prefix=BAD-ZERO
// RUN: not hector-opt %s -hgraph-offload-scheduling='disk-write-gbps=-1' 2>&1 | FileCheck %s --check-prefix=BAD-NEGATIVE
// RUN: not hector-opt %s -hgraph-offload-scheduling='gemm-tflops=inf' 2>&1 | FileCheck %s --check-prefix=BAD-INFINITE

hgraph.func @rgat2(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                   %W1: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W1"}, %a1: !hgraph.weight<edge, 8xf32> {hgraph.name = "a1"},
                   %W2: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W2"}, %a2: !hgraph.weight<edge, 8xf32> {hgraph.name = "a2"}) -> !hgraph.node<8xf32> {
  %z1 = hgraph.typed_linear %W1, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %v1 = hgraph.typed_vector %a1 : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32>
  %s1 = hgraph.dot %z1, %v1 : !hgraph.edge<8xf32> -> !hgraph.edge<1xf32>
  %l1 = hgraph.leaky_relu %s1 alpha 0.2 : !hgraph.edge<1xf32>
  %al1 = hgraph.edge_softmax %l1 : !hgraph.edge<1xf32>
  %m1 = hgraph.scale %al1, %z1 : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %o1 = hgraph.aggregate sum %m1 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %h2 = hgraph.relu %o1 : !hgraph.node<8xf32>
  %z2 = hgraph.typed_linear %W2, %h2 from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %v2 = hgraph.typed_vector %a2 : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xf32>
  %s2 = hgraph.dot %z2, %v2 : !hgraph.edge<8xf32> -> !hgraph.edge<1xf32>
  %l2 = hgraph.leaky_relu %s2 alpha 0.2 : !hgraph.edge<1xf32>
  %al2 = hgraph.edge_softmax %l2 : !hgraph.edge<1xf32>
  %m2 = hgraph.scale %al2, %z2 : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  %o2 = hgraph.aggregate sum %m2 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %o2 : !hgraph.node<8xf32>
}

// Every saved value leaves after its last forward reader of its memory:
// the first layer's scores (slot 6) after the softmax that reduces them,
// its z (slot 5) after the aggregation whose traversal evaluates the scale
// that reads it, before the second layer runs.
// HOST-LABEL: hgraph.func @rgat2_fwd
// HOST-SAME: -> (!hgraph.node<8xf32> {hgraph.name = "result0", hgraph.role = "output"}, !hgraph.stored<!hgraph.edge<1xf32>> {hgraph.name = "saved0", hgraph.role = "saved"}
// HOST: %[[Z1:.*]] = hgraph.typed_linear %{{.*}}, %arg1 from src
// HOST: %[[SC1:.*]] = hgraph.leaky_relu
// HOST-NEXT: %[[AL1:.*]] = hgraph.edge_softmax %[[SC1]]
// HOST-NEXT: %[[S6:.*]] = hgraph.evict %[[SC1]] to host slot 6 : !hgraph.edge<1xf32> -> !hgraph.stored<!hgraph.edge<1xf32>>
// HOST-NEXT: %[[M1:.*]] = hgraph.scale %[[AL1]], %[[Z1]]
// HOST-NEXT: hgraph.aggregate sum %[[M1]]
// HOST-NEXT: %[[S5:.*]] = hgraph.evict %[[Z1]] to host slot 5 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
// HOST-NEXT: %[[S4:.*]] = hgraph.evict %[[AL1]] to host slot 4
// HOST: hgraph.typed_linear %arg4
// HOST: hgraph.return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[S4]], %[[S5]], %[[S6]]

// The backward takes them stored and prefetches each before its first
// reader. Without a capacity, a prefetch goes to the latest point that
// still hides its read; none does at these rates, so they start at the
// backward's entry (SLOW below has one that hides). The first layer's
// leaky ReLU gradient reads its scores' prefetch.
// HOST-LABEL: hgraph.func @rgat2_bwd
// HOST-SAME: %[[ARG5:[^:]*]]: !hgraph.stored<!hgraph.edge<8xf32>> {hgraph.name = "saved5", hgraph.role = "saved"}
// HOST-SAME: %[[ARG6:[^:]*]]: !hgraph.stored<!hgraph.edge<1xf32>> {hgraph.name = "saved6", hgraph.role = "saved"}
// HOST: hgraph.prefetch %{{.*}} slot 0
// HOST: %[[Z1B:.*]] = hgraph.prefetch %[[ARG5]] slot 5 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.edge<8xf32>
// HOST: %[[SC1B:.*]] = hgraph.prefetch %[[ARG6]] slot 6
// HOST: hgraph.typed_linear %arg4, %{{.*}} from edge transpose
// HOST: hgraph.dot %{{.*}}, %[[Z1B]]
// HOST: hgraph.leaky_relu_grad %{{.*}}, %[[SC1B]] alpha
// HOST: hgraph.typed_linear %arg2, %{{.*}} from edge transpose
// The weight gradients are computed as soon as their operands are: the
// backward ends with the first layer's input gradient, not with every
// layer's weight gradient.
// HOST: hgraph.aggregate sum %{{.*}} to src
// HOST-NEXT: hgraph.return

// Under a capacity below the peak, recomputing is cheaper than moving at
// these rates: the first layer's z from h and W1 (one GEMM), and each
// layer's softmax α from its scores, which stay saved for it (a
// recomputation may start from a kept saved value). The first layer's
// output goes to host memory. Recomputed values leave both signatures.
// AUTO: remark: saved value 'saved0' (slot 0): {{.*}} recompute 0.008 ms: recompute
// AUTO: remark: saved value 'saved2' (slot 2): {{.*}}: keep
// AUTO: remark: saved value 'saved3' (slot 3): {{.*}}: host, prefetched at #15
// AUTO: remark: saved value 'saved5' (slot 5): 32*E bytes = 61.0 MiB; produced at #0, last forward reader #6, backward readers #35..#42 (of 51; the backward starts at #15); idle 0.229 ms; round trip host 2.377 ms, disk 56.939 ms, recompute 0.043 ms: recompute
// AUTO: remark: offload plan for @rgat2_fwd and @rgat2_bwd: step peak 230.5 MiB kept, 166.8 MiB planned; capacity 200.0 MiB; estimated step time 0.517 ms (operations 0.452 ms, recomputing 0.060 ms, waiting for prefetches 0.005 ms)
// AUTO-LABEL: hgraph.func @rgat2_fwd
// AUTO-NOT: saved5
// AUTO-SAME: {hgraph.name = "saved6", hgraph.role = "saved"}) attributes
// AUTO: hgraph.evict %{{.*}} to host slot 3
// AUTO-NOT: evict
// AUTO-LABEL: hgraph.func @rgat2_bwd
// AUTO-SAME: %[[L2:[^:]*]]: !hgraph.edge<1xf32> {hgraph.name = "saved2", hgraph.role = "saved"}
// AUTO-NOT: saved5
// AUTO-SAME: %[[L1:[^:]*]]: !hgraph.edge<1xf32> {hgraph.name = "saved6", hgraph.role = "saved"}
// AUTO: hgraph.prefetch %{{.*}} slot 3
// AUTO: hgraph.edge_softmax %[[L2]]
// AUTO: %[[Z1R:.*]] = hgraph.typed_linear %arg2, %arg1 from src
// AUTO: hgraph.dot %{{.*}}, %[[Z1R]]
// AUTO: hgraph.edge_softmax %[[L1]]

// When computing is slow, moving is cheaper: to host memory, every value
// whose copies the idle periods can hide, each prefetched at the earliest
// point from which it fits under the capacity. The second layer's z is
// read back 0.16 ms after the forward wrote it: its copy would hold its
// memory as long as keeping it, so it stays.
// SLOW: remark: saved value 'saved1' (slot 1): {{.*}} round trip host 2.377 ms, disk 56.939 ms, recompute 25.760 ms: keep
// SLOW: remark: saved value 'saved5' (slot 5): {{.*}} round trip host 2.377 ms, disk 56.939 ms, recompute 25.600 ms: host, prefetched at #33
// SLOW: remark: saved value 'saved6' (slot 6): {{.*}} round trip host 0.297 ms, disk 7.117 ms, recompute 3.600 ms: host, prefetched at #15
// SLOW: remark: offload plan for @rgat2_fwd and @rgat2_bwd: step peak 230.5 MiB kept, 159.1 MiB planned; capacity 160.0 MiB
// The first layer's z is read back only after the second layer's own
// backward has begun, not at the entry.
// SLOW-LABEL: hgraph.func @rgat2_bwd
// SLOW: hgraph.prefetch %{{.*}} slot 6
// SLOW: hgraph.dot
// SLOW: %[[Z1S:.*]] = hgraph.prefetch %{{.*}} slot 5
// SLOW: hgraph.dot %{{.*}}, %[[Z1S]]

// With 10 MiB of host memory: the second layer's 7.6 MiB scores go to host
// memory; the rest no longer fits there and goes to disk, the first
// layer's 61 MiB z too: its 57 ms round trip, queued behind the others and
// mostly idle time, adds less to the step than its 26 ms recomputation.
// The disk reads still stall the step: the remark counts the wait.
// DISK: remark: offload plan for @rgat2_fwd and @rgat2_bwd: step peak 230.5 MiB kept, 159.1 MiB planned; capacity 160.0 MiB; estimated step time {{.*}} waiting for prefetches 41.869 ms)
// DISK-LABEL: hgraph.func @rgat2_fwd
// DISK-DAG: hgraph.evict %{{.*}} to disk slot 5
// DISK-DAG: hgraph.evict %{{.*}} to disk slot 3
// DISK-DAG: hgraph.evict %{{.*}} to host slot 2
// DISK-DAG: hgraph.evict %{{.*}} to disk slot 0
// DISK-LABEL: hgraph.func @rgat2_bwd
// DISK-DAG: hgraph.prefetch %{{.*}} slot 0
// DISK-DAG: hgraph.prefetch %{{.*}} slot 2
// DISK-DAG: hgraph.prefetch %{{.*}} slot 3
// DISK-DAG: hgraph.prefetch %{{.*}} slot 5

// NONE-NOT: hgraph.evict
// NONE-NOT: hgraph.prefetch
// NONE-NOT: !hgraph.stored

// BAD: error: hgraph-offload-scheduling: mode must be none, host, disk or auto; got 'gpu'
// BAD-ZERO: error: hgraph-offload-scheduling: device-gbps must be a positive, finite number; got 0
// BAD-NEGATIVE: error: hgraph-offload-scheduling: disk-write-gbps must be a positive, finite number; got -1
// BAD-INFINITE: error: hgraph-offload-scheduling: gemm-tflops must be a positive, finite number; got inf
