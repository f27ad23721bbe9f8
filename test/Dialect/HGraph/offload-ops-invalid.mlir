// RUN: hector-opt %s -split-input-file -verify-diagnostics

// The evicted rows are gone: nothing may read them after the evict.
hgraph.func @read_after_evict(%g: !hgraph.graph, %z: !hgraph.edge<8xf32>) -> (!hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>) {
  // expected-error @+1 {{evicts a value that is read after it}}
  %s = hgraph.evict %z to host slot 0 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  // expected-note @+1 {{read here}}
  %o = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %o, %s : !hgraph.node<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>
}

// -----

hgraph.func @evict_type(%g: !hgraph.graph, %z: !hgraph.edge<8xf32>) -> !hgraph.stored<!hgraph.edge<4xf32>> {
  // expected-error @+1 {{must store the evicted value's type '!hgraph.edge<8xf32>'}}
  %s = hgraph.evict %z to host slot 0 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<4xf32>>
  hgraph.return %s : !hgraph.stored<!hgraph.edge<4xf32>>
}

// -----

hgraph.func @negative_slot(%g: !hgraph.graph, %z: !hgraph.edge<8xf32>) -> !hgraph.stored<!hgraph.edge<8xf32>> {
  // expected-error @+1 {{attribute 'slot' failed to satisfy constraint}}
  %s = hgraph.evict %z to host slot -1 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  hgraph.return %s : !hgraph.stored<!hgraph.edge<8xf32>>
}

// -----

hgraph.func @stored_weight(%g: !hgraph.graph, %W: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{operand #0 must be node-wise or edge-wise value}}
  %s = hgraph.evict %W to host slot 0 : !hgraph.weight<edge, 8x8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  hgraph.return
}

// -----

// A stored value is only returned: another reader would see no rows.
hgraph.func @stored_read(%g: !hgraph.graph, %z: !hgraph.edge<8xf32>) -> !hgraph.stored<!hgraph.edge<8xf32>> {
  // expected-error @+1 {{result may only be returned (for the backward to prefetch), but is used by hgraph.prefetch}}
  %s = hgraph.evict %z to host slot 0 : !hgraph.edge<8xf32> -> !hgraph.stored<!hgraph.edge<8xf32>>
  %v = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.edge<8xf32>
  hgraph.return %s : !hgraph.stored<!hgraph.edge<8xf32>>
}

// -----

hgraph.func @prefetch_twice(%g: !hgraph.graph, %s: !hgraph.stored<!hgraph.edge<8xf32>>) -> !hgraph.edge<8xf32> {
  // expected-error @+1 {{prefetches a stored value a second time}}
  %a = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.edge<8xf32>
  // expected-note @+1 {{also prefetched here}}
  %b = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.edge<8xf32>
  %c = hgraph.add %a, %b : !hgraph.edge<8xf32>
  hgraph.return %c : !hgraph.edge<8xf32>
}

// -----

hgraph.func @prefetch_type(%g: !hgraph.graph, %s: !hgraph.stored<!hgraph.edge<8xf32>>) -> !hgraph.node<8xf32> {
  // expected-error @+1 {{must be the stored value's type '!hgraph.edge<8xf32>'}}
  %v = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.node<8xf32>
  hgraph.return %v : !hgraph.node<8xf32>
}

// -----

// A stored argument is read only through its prefetch.
hgraph.func @stored_returned(%g: !hgraph.graph, %s: !hgraph.stored<!hgraph.edge<8xf32>>) -> (!hgraph.edge<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>) {
  // expected-error @+1 {{stored value may only be prefetched, but is also used by hgraph.return}}
  %v = hgraph.prefetch %s slot 0 : !hgraph.stored<!hgraph.edge<8xf32>> -> !hgraph.edge<8xf32>
  hgraph.return %v, %s : !hgraph.edge<8xf32>, !hgraph.stored<!hgraph.edge<8xf32>>
}
