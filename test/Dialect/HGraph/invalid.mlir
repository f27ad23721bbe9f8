// RUN: hector-opt %s -split-input-file -verify-diagnostics

// One case per hgraph verifier error.

// expected-error @+1 {{feature width must be positive, got 0}}
hgraph.func @zero_width(%g: !hgraph.graph, %h: !hgraph.node<0xf32>) { hgraph.return }

// -----

// expected-error @+1 {{feature element type must be a float type, got 'i32'}}
hgraph.func @int_features(%g: !hgraph.graph, %h: !hgraph.node<8xi32>) { hgraph.return }

// -----

// expected-error @+1 {{head count 4 does not divide the feature width 10}}
hgraph.func @heads_do_not_divide(%g: !hgraph.graph, %h: !hgraph.edge<10xf32, heads = 4>) { hgraph.return }

// -----

// expected-error @+1 {{head count must be positive, got 0}}
hgraph.func @zero_heads(%g: !hgraph.graph, %h: !hgraph.node<8xf32, heads = 0>) { hgraph.return }

// -----

// expected-error @+1 {{expected one dimension (the feature width), got 2}}
hgraph.func @two_dims(%g: !hgraph.graph, %h: !hgraph.node<4x4xf32>) { hgraph.return }

// -----

// expected-error @+1 {{got rank 4}}
hgraph.func @weight_rank(%g: !hgraph.graph, %w: !hgraph.weight<edge, 2x2x2x2xf32>) { hgraph.return }

// -----

// expected-error @+1 {{expected weight index 'single', 'node' or 'edge', got 'relation'}}
hgraph.func @weight_index(%g: !hgraph.graph, %w: !hgraph.weight<relation, 4x4xf32>) { hgraph.return }

// -----

// expected-error @+1 {{weight element type must be a float type, got 'i8'}}
hgraph.func @weight_int(%g: !hgraph.graph, %w: !hgraph.weight<edge, 4x4xi8>) { hgraph.return }

// -----

// expected-error @+1 {{weight dimensions must be in [1, 16777216], got 0}}
hgraph.func @weight_zero(%g: !hgraph.graph, %w: !hgraph.weight<edge, 4x0xf32>) { hgraph.return }

// -----

// expected-error @+1 {{takes exactly one !hgraph.graph argument, got 0}}
hgraph.func @no_graph(%h: !hgraph.node<8xf32>) { hgraph.return }

// -----

// expected-error @+1 {{takes exactly one !hgraph.graph argument, got 2}}
hgraph.func @two_graphs(%g: !hgraph.graph, %g2: !hgraph.graph) { hgraph.return }

// -----

// expected-error @+1 {{argument #1 has type 'i32'; arguments are the graph, node-wise or edge-wise values (possibly stored), weights, and seeds}}
hgraph.func @bad_argument(%g: !hgraph.graph, %x: i32) { hgraph.return }

// -----

// expected-error @+1 {{result #0 has type '!hgraph.graph'; results are node-wise or edge-wise values (possibly stored), or weights}}
hgraph.func @bad_result(%g: !hgraph.graph) -> !hgraph.graph { hgraph.return %g : !hgraph.graph }

// -----

// expected-error @+1 {{failed to verify constraint: region with 1 blocks}}
hgraph.func @declaration(%g: !hgraph.graph)

// -----

hgraph.func @return_count(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) -> !hgraph.node<8xf32> {
  // expected-error @+1 {{returns 0 values but the function declares 1 results}}
  hgraph.return
}

// -----

hgraph.func @return_type(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) -> !hgraph.node<16xf32> {
  // expected-error @+1 {{operand #0 has type '!hgraph.node<8xf32>' but the function result has type '!hgraph.node<16xf32>'}}
  hgraph.return %h : !hgraph.node<8xf32>
}

// -----

hgraph.func @from_node_edge_input(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %w: !hgraph.weight<single, 8x8xf32>) {
  // expected-error @+1 {{'from node' needs a node-wise input, got edge-wise '!hgraph.edge<8xf32>'}}
  %0 = hgraph.typed_linear %w, %x from node : !hgraph.weight<single, 8x8xf32>, !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @from_src_node_result(%g: !hgraph.graph, %x: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{'from src' maps rows to an edge-wise result, got node-wise '!hgraph.node<8xf32>'}}
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @from_edge_node_input(%g: !hgraph.graph, %x: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{'from edge' needs an edge-wise input, got node-wise '!hgraph.node<8xf32>'}}
  %0 = hgraph.typed_linear %w, %x from edge : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @edge_weight_on_nodes(%g: !hgraph.graph, %x: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{an edge-typed weight cannot be applied to node rows ('from node'): a node has no edge type}}
  %0 = hgraph.typed_linear %w, %x from node : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @node_weight_on_edges(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %w: !hgraph.weight<node, 8x8xf32>) {
  // expected-error @+1 {{a node-typed weight cannot be applied to an edge-wise value: use 'from src' or 'from dst' to say whose node type selects the weight}}
  %0 = hgraph.typed_linear %w, %x from edge : !hgraph.weight<node, 8x8xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @linear_vector_weight(%g: !hgraph.graph, %x: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8xf32>) {
  // expected-error @+1 {{needs a matrix [in, out] or per-head [H, in/H, out/H] weight, got the vector weight '!hgraph.weight<edge, 8xf32>'}}
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @linear_input_width(%g: !hgraph.graph, %x: !hgraph.node<32xf32>, %w: !hgraph.weight<edge, 64x64xf32>) {
  // expected-error @+1 {{input width 32 does not match the weight's input width 64}}
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<32xf32> -> !hgraph.edge<64xf32>
  hgraph.return
}

// -----

hgraph.func @linear_output_width(%g: !hgraph.graph, %x: !hgraph.node<64xf32>, %w: !hgraph.weight<edge, 64x32xf32>) {
  // expected-error @+1 {{result width 64 does not match the weight's output width 32}}
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 64x32xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  hgraph.return
}

// -----

hgraph.func @linear_per_head(%g: !hgraph.graph, %x: !hgraph.node<64xf32, heads = 2>, %w: !hgraph.weight<edge, 4x16x16xf32>) {
  // expected-error @+1 {{a per-head weight with 4 heads needs input and result with 4 heads, got 2 and 4}}
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 4x16x16xf32>, !hgraph.node<64xf32, heads = 2> -> !hgraph.edge<64xf32, heads = 4>
  hgraph.return
}

// -----

hgraph.func @linear_element_type(%g: !hgraph.graph, %x: !hgraph.node<8xf16>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{weight, input and result must have one element type}}
  %0 = hgraph.typed_linear %w, %x from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf16> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @vector_of_matrix(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{needs a vector weight [n], got '!hgraph.weight<edge, 8x8xf32>'}}
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8x8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @vector_edge_on_nodes(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8xf32>) {
  // expected-error @+1 {{an edge-typed weight pairs with an edge-wise value, got '!hgraph.node<8xf32>'}}
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @vector_node_on_edges(%g: !hgraph.graph, %w: !hgraph.weight<node, 8xf32>) {
  // expected-error @+1 {{a node-typed weight pairs with a node-wise value, got '!hgraph.edge<8xf32>'}}
  %0 = hgraph.typed_vector %w : !hgraph.weight<node, 8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @vector_width(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8xf32>) {
  // expected-error @+1 {{row width 16 does not match the weight's length 8}}
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<16xf32>
  hgraph.return
}

// -----

hgraph.func @vector_element_type(%g: !hgraph.graph, %w: !hgraph.weight<edge, 8xf32>) {
  // expected-error @+1 {{weight and rows must have one element type}}
  %0 = hgraph.typed_vector %w : !hgraph.weight<edge, 8xf32> -> !hgraph.edge<8xbf16>
  hgraph.return
}

// -----

hgraph.func @product_mixed(%g: !hgraph.graph, %a: !hgraph.weight<node, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{a product of a node-typed and an edge-typed weight needs 'node_of src' or 'node_of dst'}}
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<node, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @product_mixed_node_of_node(%g: !hgraph.graph, %a: !hgraph.weight<node, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{a product of a node-typed and an edge-typed weight needs 'node_of src' or 'node_of dst'}}
  %0 = hgraph.weight_product %a, %b node_of node : !hgraph.weight<node, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @product_node_of(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{'node_of' is only meaningful for a product of a node-typed and an edge-typed weight}}
  %0 = hgraph.weight_product %a, %b node_of src : !hgraph.weight<edge, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @product_index(%g: !hgraph.graph, %a: !hgraph.weight<single, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{result must be indexed by 'edge', got 'node'}}
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<single, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> !hgraph.weight<node, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @product_two_vectors(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8xf32>) {
  // expected-error @+1 {{the product of two vectors is a dot product, not a weight; use hgraph.dot on rows}}
  %0 = hgraph.weight_product %a, %a : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 1xf32>
  hgraph.return
}

// -----

hgraph.func @product_inner(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x16xf32>, %b: !hgraph.weight<edge, 8xf32>) {
  // expected-error @+1 {{inner dimensions do not match: 16 vs 8}}
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 8x16xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return
}

// -----

hgraph.func @product_shape(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x16xf32>, %b: !hgraph.weight<edge, 16xf32>) {
  // expected-error @+1 {{result slice shape must be [8], got '!hgraph.weight<edge, 16xf32>'}}
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 8x16xf32>, !hgraph.weight<edge, 16xf32> -> !hgraph.weight<edge, 16xf32>
  hgraph.return
}

// -----

hgraph.func @product_per_head(%g: !hgraph.graph, %a: !hgraph.weight<edge, 4x8x8xf32>, %b: !hgraph.weight<edge, 2x8x8xf32>) {
  // expected-error @+1 {{per-head shapes '!hgraph.weight<edge, 4x8x8xf32>' and '!hgraph.weight<edge, 2x8x8xf32>' do not chain}}
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 4x8x8xf32>, !hgraph.weight<edge, 2x8x8xf32> -> !hgraph.weight<edge, 4x8x8xf32>
  hgraph.return
}

// -----

hgraph.func @product_element_type(%g: !hgraph.graph, %a: !hgraph.weight<edge, 8x8xf32>, %b: !hgraph.weight<edge, 8x8xf16>) {
  // expected-error @+1 {{operands and result must have one element type}}
  %0 = hgraph.weight_product %a, %b : !hgraph.weight<edge, 8x8xf32>, !hgraph.weight<edge, 8x8xf16> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @gather_from_node(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  // expected-error @+1 {{reads at 'src' or 'dst', got 'node'}}
  %0 = hgraph.gather %h from node : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @gather_width(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  // expected-error @+1 {{must have the width, heads and element type of the input}}
  %0 = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @gather_edge_input(%g: !hgraph.graph, %h: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{operand #0 must be a value with one row per node}}
  %0 = hgraph.gather %h from src : !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @norm_width(%g: !hgraph.graph) {
  // expected-error @+1 {{produces one scalar per edge (width 1), got width 2}}
  %0 = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<2xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @aggregate_nodes(%g: !hgraph.graph, %h: !hgraph.node<8xf32>) {
  // expected-error @+1 {{reduces the incoming edges of each node; its input must be edge-wise, got node-wise '!hgraph.node<8xf32>'}}
  %0 = hgraph.aggregate sum %h : !hgraph.node<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @aggregate_to_edges(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{produces a node-wise value, got '!hgraph.edge<8xf32>'}}
  %0 = hgraph.aggregate max %x : !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @aggregate_width(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{must have the width, heads and element type of the input}}
  %0 = hgraph.aggregate mean %x : !hgraph.edge<8xf32> -> !hgraph.node<16xf32>
  hgraph.return
}

// -----

hgraph.func @softmax_nodes(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) {
  // expected-error @+1 {{normalizes over the incoming edges of each node; its input must be edge-wise, got node-wise '!hgraph.node<4xf32>'}}
  %0 = hgraph.edge_softmax %h : !hgraph.node<4xf32>
  hgraph.return
}

// -----

hgraph.func @softmax_by_type_nodes(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) {
  // expected-error @+1 {{normalizes over each node's incoming edges of one edge type; its input must be edge-wise, got node-wise '!hgraph.node<4xf32>'}}
  %0 = hgraph.edge_softmax %h by_type : !hgraph.node<4xf32>
  hgraph.return
}

// -----

hgraph.func @group_sum_nodes(%g: !hgraph.graph, %h: !hgraph.node<4xf32, heads = 2>) {
  // expected-error @+1 {{sums each edge's (destination, edge type) group; its input must be edge-wise, got node-wise '!hgraph.node<4xf32, heads = 2>'}}
  %0 = hgraph.group_sum %h : !hgraph.node<4xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @group_sum_types(%g: !hgraph.graph, %x: !hgraph.edge<4xf32>) {
  // expected-error @+1 {{all of {input, result} have same type}}
  %0 = "hgraph.group_sum"(%x) : (!hgraph.edge<4xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @dot_domain(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{result must be edge-wise like the operands, got '!hgraph.node<1xf32>'}}
  %0 = hgraph.dot %x, %x : !hgraph.edge<8xf32> -> !hgraph.node<1xf32>
  hgraph.return
}

// -----

hgraph.func @dot_width(%g: !hgraph.graph, %x: !hgraph.edge<8xf32, heads = 2>) {
  // expected-error @+1 {{produces one value per head: the result must have width 2 and 2 heads, got '!hgraph.edge<8xf32, heads = 2>'}}
  %0 = hgraph.dot %x, %x : !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<8xf32, heads = 2>
  hgraph.return
}

// -----

hgraph.func @dot_operands(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.edge<16xf32>) {
  // expected-error @+1 {{requires all operands to have the same type}}
  %0 = "hgraph.dot"(%x, %y) : (!hgraph.edge<8xf32>, !hgraph.edge<16xf32>) -> !hgraph.edge<1xf32>
  hgraph.return
}

// -----

hgraph.func @scale_result(%g: !hgraph.graph, %s: !hgraph.edge<1xf32>, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{result type must equal the input type '!hgraph.edge<8xf32>'}}
  %0 = hgraph.scale %s, %x : !hgraph.edge<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<16xf32>
  hgraph.return
}

// -----

hgraph.func @scale_domain(%g: !hgraph.graph, %s: !hgraph.node<1xf32>, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{scale and input must both be node-wise or both edge-wise}}
  %0 = hgraph.scale %s, %x : !hgraph.node<1xf32>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @scale_not_per_head(%g: !hgraph.graph, %s: !hgraph.edge<4xf32>, %x: !hgraph.edge<8xf32, heads = 4>) {
  // expected-error @+1 {{scale must hold one scalar per head (width equal to its head count), got '!hgraph.edge<4xf32>'}}
  %0 = hgraph.scale %s, %x : !hgraph.edge<4xf32>, !hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  hgraph.return
}

// -----

hgraph.func @scale_columns(%g: !hgraph.graph, %s: !hgraph.edge<2xf32, heads = 2>, %x: !hgraph.edge<8xf32, heads = 4>) {
  // expected-error @+1 {{scale has 2 columns but the input has 4 heads}}
  %0 = hgraph.scale %s, %x : !hgraph.edge<2xf32, heads = 2>, !hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>
  hgraph.return
}

// -----

hgraph.func @scale_element_type(%g: !hgraph.graph, %s: !hgraph.edge<1xf16>, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{scale and input must have one element type}}
  %0 = hgraph.scale %s, %x : !hgraph.edge<1xf16>, !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @concat_one(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{concatenates at least two values, got 1}}
  %0 = hgraph.concat %x : !hgraph.edge<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @concat_heads(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.edge<8xf32, heads = 2>) {
  // expected-error @+1 {{operand #1 ('!hgraph.edge<8xf32, heads = 2>') must have the domain, element type and heads of the result '!hgraph.edge<16xf32>'}}
  %0 = hgraph.concat %x, %y : !hgraph.edge<8xf32>, !hgraph.edge<8xf32, heads = 2> -> !hgraph.edge<16xf32>
  hgraph.return
}

// -----

hgraph.func @concat_width(%g: !hgraph.graph, %x: !hgraph.node<8xf32>) {
  // expected-error @+1 {{result width must be the sum of the operand widths, 16, got 24}}
  %0 = hgraph.concat %x, %x : !hgraph.node<8xf32>, !hgraph.node<8xf32> -> !hgraph.node<24xf32>
  hgraph.return
}

// -----

hgraph.func @leaky_relu_slope(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{negative slope must be finite}}
  %0 = hgraph.leaky_relu %x alpha 0x7FF0000000000000 : !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @binary_types(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>, %y: !hgraph.node<8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "hgraph.add"(%x, %y) : (!hgraph.edge<8xf32>, !hgraph.node<8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @compact_from_dst(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{compact materialization needs a value that depends only on the source node and the edge type}}
  %0 = hgraph.typed_linear %w, %h from dst {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @compact_softmax(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  %0 = hgraph.typed_linear %w, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  // expected-error @+1 {{compact materialization needs a value that depends only on the source node and the edge type}}
  %1 = hgraph.edge_softmax %0 {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @compact_argument(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{compact materialization needs a value that depends only on the source node and the edge type}}
  %0 = hgraph.exp %x {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @materialize_node(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{'hgraph.materialization' applies only to an operation with one edge-wise result, or to a weight gradient}}
  %0 = hgraph.aggregate sum %x {hgraph.materialization = #hgraph.materialization<vanilla>} : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return
}

// -----

hgraph.func @compact_weight_grad_from_dst(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %d: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{compact materialization of a weight gradient needs 'from src' and an edge-typed weight}}
  %0 = hgraph.weight_grad %h from dst, %d {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.node<8xf32>, !hgraph.edge<8xf32> -> !hgraph.weight<edge, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @compact_weight_grad_single(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %d: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{compact materialization of a weight gradient needs 'from src' and an edge-typed weight}}
  %0 = hgraph.weight_grad %h from src, %d {hgraph.materialization = #hgraph.materialization<compact>} : !hgraph.node<8xf32>, !hgraph.edge<8xf32> -> !hgraph.weight<single, 8x8xf32>
  hgraph.return
}

// -----

hgraph.func @materialize_int(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{'hgraph.materialization' must be a #hgraph.materialization attribute}}
  %0 = hgraph.exp %x {hgraph.materialization = 1 : i32} : !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @unknown_attribute(%g: !hgraph.graph, %x: !hgraph.edge<8xf32>) {
  // expected-error @+1 {{unknown hgraph attribute 'hgraph.layout'}}
  %0 = hgraph.exp %x {hgraph.layout = 1 : i32} : !hgraph.edge<8xf32>
  hgraph.return
}

// -----

// expected-error @+1 {{feature width 9223372036854775807 exceeds the limit 16777216}}
hgraph.func @huge_width(%g: !hgraph.graph, %h: !hgraph.node<9223372036854775807xf32>) { hgraph.return }

// -----

// expected-error @+1 {{weight dimensions must be in [1, 16777216], got 4611686018427387904}}
hgraph.func @huge_weight(%g: !hgraph.graph, %w: !hgraph.weight<edge, 4611686018427387904x4xf32>) { hgraph.return }

// -----

// A materialization attribute on an operation that is itself malformed is
// diagnosed, not crashed on.
hgraph.func @compact_malformed(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{compact materialization needs a value that depends only on the source node and the edge type}}
  %0 = "hgraph.typed_linear"(%w) {hgraph.materialization = #hgraph.materialization<compact>} : (!hgraph.weight<edge, 8x8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @missing_endpoint(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %w: !hgraph.weight<edge, 8x8xf32>) {
  // expected-error @+1 {{requires attribute 'from'}}
  %0 = "hgraph.typed_linear"(%w, %h) : (!hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32>) -> !hgraph.edge<8xf32>
  hgraph.return
}

// -----

hgraph.func @outer_of_a_matrix(%g: !hgraph.graph, %u: !hgraph.weight<edge, 4x4xf32>, %v: !hgraph.weight<edge, 4xf32>) -> !hgraph.weight<edge, 4x4xf32> {
  // expected-error @+1 {{multiplies two weight vectors}}
  %r = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 4x4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x4xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x4xf32>
}

// -----

hgraph.func @outer_indexed_apart(%g: !hgraph.graph, %u: !hgraph.weight<node, 4xf32>, %v: !hgraph.weight<edge, 4xf32>) -> !hgraph.weight<edge, 4x4xf32> {
  // expected-error @+1 {{operands and result must be indexed alike}}
  %r = hgraph.weight_outer %u, %v : !hgraph.weight<node, 4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x4xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x4xf32>
}

// -----

hgraph.func @outer_wrong_shape(%g: !hgraph.graph, %u: !hgraph.weight<edge, 8xf32>, %v: !hgraph.weight<edge, 4xf32>) -> !hgraph.weight<edge, 4x8xf32> {
  // expected-error @+1 {{is not the outer product of}}
  %r = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 8xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4x8xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x8xf32>
}

// -----

hgraph.func @outer_to_a_vector(%g: !hgraph.graph, %u: !hgraph.weight<edge, 4xf32>, %v: !hgraph.weight<edge, 4xf32>) -> !hgraph.weight<edge, 4xf32> {
  // expected-error @+1 {{result must be a matrix or a per-head matrix}}
  %r = hgraph.weight_outer %u, %v : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 4xf32> -> !hgraph.weight<edge, 4xf32>
  hgraph.return %r : !hgraph.weight<edge, 4xf32>
}

// -----

hgraph.func @head_product_of_per_head(%g: !hgraph.graph, %u: !hgraph.weight<edge, 2x4x4xf32>, %v: !hgraph.weight<edge, 8xf32>) -> !hgraph.weight<edge, 8x2xf32> {
  // expected-error @+1 {{with 'heads', multiplies a matrix by a vector or an [m, heads] matrix by an [m, n] matrix}}
  %r = hgraph.weight_product %u, %v heads 2 : !hgraph.weight<edge, 2x4x4xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 8x2xf32>
  hgraph.return %r : !hgraph.weight<edge, 8x2xf32>
}

// -----

hgraph.func @head_product_uneven(%g: !hgraph.graph, %W: !hgraph.weight<edge, 4x6xf32>, %v: !hgraph.weight<edge, 6xf32>) -> !hgraph.weight<edge, 4x4xf32> {
  // expected-error @+1 {{width 6 does not split into 4 heads}}
  %r = hgraph.weight_product %W, %v heads 4 : !hgraph.weight<edge, 4x6xf32>, !hgraph.weight<edge, 6xf32> -> !hgraph.weight<edge, 4x4xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x4xf32>
}

// -----

hgraph.func @head_product_shape(%g: !hgraph.graph, %W: !hgraph.weight<edge, 4x8xf32>, %v: !hgraph.weight<edge, 8xf32>) -> !hgraph.weight<edge, 4xf32> {
  // expected-error @+1 {{result slice shape must be [4, 2]}}
  %r = hgraph.weight_product %W, %v heads 2 : !hgraph.weight<edge, 4x8xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 4xf32>
  hgraph.return %r : !hgraph.weight<edge, 4xf32>
}

// -----

hgraph.func @head_product_gradient_columns(%g: !hgraph.graph, %u: !hgraph.weight<edge, 4x3xf32>, %W: !hgraph.weight<edge, 4x8xf32>) -> !hgraph.weight<edge, 8xf32> {
  // expected-error @+1 {{with 'heads 2' and two matrices, the left one must be [4, 2]}}
  %r = hgraph.weight_product %u, %W heads 2 : !hgraph.weight<edge, 4x3xf32>, !hgraph.weight<edge, 4x8xf32> -> !hgraph.weight<edge, 8xf32>
  hgraph.return %r : !hgraph.weight<edge, 8xf32>
}

// -----

hgraph.func @head_product_one_head(%g: !hgraph.graph, %W: !hgraph.weight<edge, 4x8xf32>, %v: !hgraph.weight<edge, 8xf32>) -> !hgraph.weight<edge, 4x1xf32> {
  // expected-error @+1 {{attribute 'heads' failed to satisfy constraint}}
  %r = hgraph.weight_product %W, %v heads 1 : !hgraph.weight<edge, 4x8xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 4x1xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x1xf32>
}

// -----

hgraph.func @head_outer_of_vectors(%g: !hgraph.graph, %u: !hgraph.weight<edge, 4xf32>, %v: !hgraph.weight<edge, 8xf32>) -> !hgraph.weight<edge, 4x8xf32> {
  // expected-error @+1 {{with 'heads 2', multiplies an [m, 2] matrix by a vector into a matrix}}
  %r = hgraph.weight_outer %u, %v heads 2 : !hgraph.weight<edge, 4xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 4x8xf32>
  hgraph.return %r : !hgraph.weight<edge, 4x8xf32>
}

// -----

hgraph.func @head_outer_shape(%g: !hgraph.graph, %u: !hgraph.weight<edge, 4x2xf32>, %v: !hgraph.weight<edge, 8xf32>) -> !hgraph.weight<edge, 8x4xf32> {
  // expected-error @+1 {{result must be [4, 8]}}
  %r = hgraph.weight_outer %u, %v heads 2 : !hgraph.weight<edge, 4x2xf32>, !hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 8x4xf32>
  hgraph.return %r : !hgraph.weight<edge, 8x4xf32>
}
