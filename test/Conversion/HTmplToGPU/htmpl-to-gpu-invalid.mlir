// RUN: hector-opt %s --htmpl-to-gpu --split-input-file --verify-diagnostics

// Instances the GPU lowering cannot handle are rejected with a located
// diagnostic (and the pass fails, leaving the IR untouched) instead of
// producing a wrong or unlaunchable kernel.

func.func @nodes_without_count(%b: memref<?x4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{cannot tell the node count: a node traversal needs node_types or an operand accessed 'as node'}}
  htmpl.traversal nodes ins(%b : memref<?x4xf32> as whole)
      outs(%y : memref<4xf32> as whole) {
  ^bb0(%n: index, %rb: index, %ry: index):
    %c0 = arith.constant 0 : index
    %v = memref.load %b[%n, %c0] : memref<?x4xf32>
    memref.store %v, %y[%c0] : memref<4xf32>
  }
  return
}

// -----

func.func @accumulate_index(%src: memref<?xi32>, %dst: memref<?xi32>,
                            %ety: memref<?xi32>, %out: memref<?xindex>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%out : memref<?xindex> as dst) {
  ^bb0(%e: index, %ro: index):
    // expected-error @+1 {{cannot be lowered to an atomic update: element type 'index' is neither an integer nor a float}}
    htmpl.accumulate add %e, %out[%ro] : index, memref<?xindex>
  }
  return
}

// -----

func.func private @helper(f32) -> f32

func.func @call_in_body(%src: memref<?xi32>, %dst: memref<?xi32>,
                        %ety: memref<?xi32>, %x: memref<?xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%x : memref<?xf32> as edge) {
  ^bb0(%e: index, %rx: index):
    %v = memref.load %x[%rx] : memref<?xf32>
    // expected-error @+1 {{has unknown memory effects; a traversal body on the GPU may only compute, load, store and accumulate}}
    %w = func.call @helper(%v) : (f32) -> f32
    memref.store %w, %x[%rx] : memref<?xf32>
  }
  return
}

// -----

func.func @nested_gemm(%src: memref<?xi32>, %dst: memref<?xi32>,
                       %ety: memref<?xi32>, %x: memref<?xf32>,
                       %lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                       %out: memref<?x4xf32>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%x : memref<?xf32> as edge) {
  ^bb0(%e: index, %rx: index):
    // expected-error @+1 {{cannot be nested in a traversal body on the GPU}}
    htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
               out(%out : memref<?x4xf32>)
  }
  return
}

// -----

func.func @coarsen_not_dividing(%lhs: memref<?x8xf32>, %rhs: memref<8x64xf32>,
                                %out: memref<?x64xf32>) {
  // expected-error @+1 {{cannot be mapped onto a GPU thread block: the column tile is not a multiple of the coarsening factor (tile [64, 64, 32], coarsen 3, launch_bounds 256)}}
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x64xf32>)
             out(%out : memref<?x64xf32>) {coarsen = 3}
  return
}

// -----

func.func @too_few_threads(%lhs: memref<?x8xf32>, %rhs: memref<8x256xf32>,
                           %out: memref<?x256xf32>) {
  // expected-error @+1 {{the column tile needs more threads than launch_bounds gives; raise coarsen or narrow the tile}}
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x256xf32>)
             out(%out : memref<?x256xf32>)
             {tile = array<i64: 64, 256, 8>, coarsen = 1, launch_bounds = 128}
  return
}

// -----

func.func @too_many_outputs(%lhs: memref<?x8xf32>, %rhs: memref<8x64xf32>,
                            %out: memref<?x64xf32>) {
  // expected-error @+1 {{more than 64 outputs per thread; raise launch_bounds or shrink the tile}}
  htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x64xf32>)
             out(%out : memref<?x64xf32>)
             {tile = array<i64: 256, 64, 8>, launch_bounds = 64}
  return
}

// -----

func.func @too_much_shared(%lhs: memref<?x512xf32>, %rhs: memref<512x64xf32>,
                           %out: memref<?x64xf32>) {
  // expected-error @+1 {{the staged tiles need 66560 bytes of shared memory, more than 49152}}
  htmpl.gemm lhs(%lhs : memref<?x512xf32>) rhs(%rhs : memref<512x64xf32>)
             out(%out : memref<?x64xf32>) {tile = array<i64: 64, 64, 128>}
  return
}

// -----

func.func @inside_a_kernel(%lhs: memref<?x8xf32>, %rhs: memref<8x4xf32>,
                           %out: memref<?x4xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    // expected-error @+1 {{must be in host code to become a GPU launch (it is nested in a kernel)}}
    htmpl.gemm lhs(%lhs : memref<?x8xf32>) rhs(%rhs : memref<8x4xf32>)
               out(%out : memref<?x4xf32>)
    gpu.terminator
  }
  return
}
