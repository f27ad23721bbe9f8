// RUN: hector-opt %s --htmpl-to-loops --split-input-file --verify-diagnostics

// Instances the loop lowering cannot handle are rejected with a located
// diagnostic (and the pass fails) instead of producing wrong loops.

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

func.func @accumulate_vector(%src: memref<?xi32>, %dst: memref<?xi32>,
                             %ety: memref<?xi32>, %v: vector<4xf32>,
                             %out: memref<?xvector<4xf32>>) {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%out : memref<?xvector<4xf32>> as dst) {
  ^bb0(%e: index, %ro: index):
    // expected-error @+1 {{element type 'vector<4xf32>' is neither an integer nor a float}}
    htmpl.accumulate max %v, %out[%ro] : vector<4xf32>, memref<?xvector<4xf32>>
  }
  return
}
