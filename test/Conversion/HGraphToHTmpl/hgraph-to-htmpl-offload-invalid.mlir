// RUN: hector-opt %s -split-input-file -hgraph-to-htmpl -verify-diagnostics

// An offload plan (hgraph-offload-scheduling) is refused by name until its
// runtime calls are lowered, in the forward that evicts ...
// expected-error @+1 {{hgraph-to-htmpl: stored values (hgraph.evict, hgraph.prefetch) are not lowered yet}}
hgraph.func @f_fwd(%g: !hgraph.graph, %z: !hgraph.edge<8xf32>) -> (!hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>) {
  %o = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %s = hgraph.evict %z to host slot 0 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  hgraph.return %o, %s : !hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>
}

// -----

// ... and in a backward that takes a stored value, prefetched or not.
// expected-error @+1 {{hgraph-to-htmpl: stored values (hgraph.evict, hgraph.prefetch) are not lowered yet}}
hgraph.func @f_bwd(%g: !hgraph.graph, %s: !hgraph.stored<!hgraph.edge<8xf32>>, %d: !hgraph.node<8xf32>) -> !hgraph.node<8xf32> {
  hgraph.return %d : !hgraph.node<8xf32>
}
