//===- HGraphOps.td - hgraph operations --------------------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPHOPS_TD
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPHOPS_TD

include "hector/Dialect/HGraph/IR/HGraphOpInterfaces.td"
include "hector/Dialect/HGraph/IR/HGraphTypes.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"

// Ops autodiff differentiates: each implements its vector-Jacobian rule
// (lib/Dialect/HGraph/IR/HGraphVJP.cpp).
defvar HGraph_VJP = DeclareOpInterfaceMethods<HGraph_VJPOpInterface>;

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

def HGraph_FuncOp : HGraph_Op<"func", [
    FunctionOpInterface, IsolatedFromAbove, Symbol]> {
  let summary = "one model layer over a heterogeneous graph";
  let description = [{
    A function whose arguments are exactly one `!hgraph.graph` plus node-wise
    values, edge-wise values and weights, and whose results are node-wise or
    edge-wise values. Every node-wise and edge-wise value in the body refers to
    the nodes and edges of the graph argument.

    ```mlir
    hgraph.func @layer(%g: !hgraph.graph, %h: !hgraph.node<64xf32>,
                       %W: !hgraph.weight<edge, 64x64xf32>)
        -> !hgraph.node<64xf32> {
      %m = hgraph.typed_linear %W, %h from src
          : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
      %o = hgraph.aggregate sum %m : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
      hgraph.return %o : !hgraph.node<64xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The graph argument every value of the body refers to.
    ::mlir::BlockArgument getGraph();
    /// The name of argument `index` in the compiled entry point and its
    /// manifest: its `hgraph.name` attribute, else `arg<index>`.
    std::string getArgumentName(unsigned index);

    // FunctionOpInterface / CallableOpInterface hooks.
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
  }];
}

def HGraph_ReturnOp : HGraph_Op<"return", [
    Pure, HasParent<"FuncOp">, ReturnLike, Terminator]> {
  let summary = "returns the results of an hgraph.func";
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` qualified(type($operands)))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Typed linear maps and typed parameters
//===----------------------------------------------------------------------===//

def HGraph_TypedLinearOp : HGraph_Op<"typed_linear", [Pure, HGraph_VJP]> {
  let summary = "linear map whose weight is chosen by node type or edge type";
  let description = [{
    `y = x · W[k]` row by row, where the slice `k` of the typed weight is
    chosen by the weight's index kind and the row's position:

    | `from`  | input     | result    | `single` | `node` weight   | `edge` weight |
    |---------|-----------|-----------|----------|-----------------|---------------|
    | `node`  | node-wise | node-wise | yes      | `τ(v)`          | no            |
    | `src`   | node-wise | edge-wise | yes      | `τ(s)`          | `φ(e)`        |
    | `dst`   | node-wise | edge-wise | yes      | `τ(t)`          | `φ(e)`        |
    | `edge`  | edge-wise | edge-wise | yes      | no (ambiguous)  | `φ(e)`        |

    With a matrix slice `[in, out]` the input has `in` features and the result
    `out` features and any head count. With a per-head slice `[H, a, b]` the
    input must have `H` heads and `H·a` features, the result `H` heads and
    `H·b` features.

    With `transpose` the map is `y = x · W[k]ᵀ`: the input has the slice's
    `out` features and the result its `in` features. Autodiff uses it for
    input gradients.

    ```mlir
    %z = hgraph.typed_linear %W, %h from src
        : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
    %dh = hgraph.typed_linear %W, %dz from edge transpose
        : !hgraph.weight<edge, 64x64xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
    ```
  }];
  let arguments = (ins HGraph_WeightType:$weight, HGraph_FeatureValue:$input,
                       HGraph_Endpoint:$from, UnitAttr:$transpose);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $weight `,` $input `from` $from (`transpose` $transpose^)? attr-dict `:`
    qualified(type($weight)) `,` qualified(type($input)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_TypedVectorOp : HGraph_Op<"typed_vector", [Pure, HGraph_VJP]> {
  let summary = "reads the slice of a typed vector weight for every row";
  let description = [{
    For an edge-typed weight the result is edge-wise, row `e` holding
    `w[φ(e)]`; for a node-typed weight it is node-wise, row `v` holding
    `w[τ(v)]`; a `single` weight may be broadcast to either. The weight slice
    must be a vector of the result's width. Used for RGAT's attention vectors
    `a_r`, `b_r` and HGT's per-head scales `μ_r`.
  }];
  let arguments = (ins HGraph_WeightType:$weight);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$weight attr-dict `:` qualified(type($weight)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def HGraph_WeightProductOp : HGraph_Op<"weight_product", [Pure, HGraph_VJP]> {
  let summary = "product of two typed weights (no graph data involved)";
  let description = [{
    `R[k] = A[k] · B[k]` for every type `k`, the matrix product of the two
    slices. A vector on the right is a column (`[m, n] · [n] → [m]`), a vector
    on the left a row (`[m] · [m, n] → [n]`), and a per-head slice `[H, a, b]`
    is the block-diagonal matrix `[H·a, H·b]` (two per-head operands stay
    per-head). Linear operator reordering creates these: RGAT's
    `dot(x · W_r, a_r)` becomes `dot(x, W_r · a_r)`.

    Index kinds combine as: `single` with anything gives the other; equal
    kinds stay; a node-typed and an edge-typed weight give an edge-typed one
    and need `node_of = src` or `dst`, which says whose node type of the edge
    type selects the node-typed slice (every edge type has fixed endpoint node
    types).

    With `heads H`, the vector `v` of length `n` is cut into `H` head blocks
    of `n / H` and each block meets its own column of the matrix factor
    (`head(j) = j / (n / H)`):
    - matrix · vector: `[m, n] · [n] → [m, H]`,
      `R[i][h] = Σ_{head(j) = h} A[i][j] · v[j]`. Reordering creates it for
      a per-head dot with a full matrix: RGAT with `H` heads,
      `dot(x · W_r, b_r)` becomes `x · (W_r · b_r heads H)`;
    - its gradient for `v`: `[m, H] · [m, n] → [n]`,
      `R[j] = Σ_i U[i][head(j)] · A[i][j]`.
    The gradient for `A` is `hgraph.weight_outer ... heads H`.
  }];
  let arguments = (ins HGraph_WeightType:$lhs, HGraph_WeightType:$rhs,
                       OptionalAttr<HGraph_Endpoint>:$node_of,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$heads);
  let results = (outs HGraph_WeightType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`node_of` $node_of^)? (`heads` $heads^)? attr-dict `:`
    qualified(type($lhs)) `,` qualified(type($rhs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_WeightOuterOp : HGraph_Op<"weight_outer", [Pure]> {
  let summary = "per-type outer product of two typed weight vectors";
  let description = [{
    `R[k] = u[k] ⊗ v[k]` for every type `k`: `R[k][i][j] = u[k][i] · v[k][j]`.
    A per-head result `[H, a, b]` keeps the diagonal blocks only:
    `R[k][h][i][j] = u[k][h·a + i] · v[k][h·b + j]`. Both vectors and the
    result are indexed alike. Autodiff writes it: it is the gradient of the
    matrix of a `weight_product` of a matrix and a vector (RGAT's `W_r · a_r`
    when reordering runs before autodiff).

    With `heads H`, `u` is a matrix `[m, H]` and `v` of length `n` is cut
    into `H` head blocks: `R[k][i][j] = u[k][i][head(j)] · v[k][j]` with
    `head(j) = j / (n / H)`, the gradient of the matrix of a
    `weight_product ... heads H`.

    ```mlir
    %dW = hgraph.weight_outer %du, %a
        : !hgraph.weight<edge, 64xf32>, !hgraph.weight<edge, 64xf32>
          -> !hgraph.weight<edge, 64x64xf32>
    %dW4 = hgraph.weight_outer %dm, %b heads 4
        : !hgraph.weight<edge, 64x4xf32>, !hgraph.weight<edge, 64xf32>
          -> !hgraph.weight<edge, 64x64xf32>
    ```
  }];
  let arguments = (ins HGraph_WeightType:$lhs, HGraph_WeightType:$rhs,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$heads);
  let results = (outs HGraph_WeightType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`heads` $heads^)? attr-dict `:` qualified(type($lhs)) `,`
    qualified(type($rhs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_WeightGradOp : HGraph_Op<"weight_grad", [Pure]> {
  let summary = "per-type sum of outer products: the gradient of a typed weight";
  let description = [{
    The gradient of `y = hgraph.typed_linear %W, %x from F` with respect to
    `W`, given the gradient `dy` of `y`:
    `dW[k] = Σ_{rows i whose type selects slice k} x_{F(i)}ᵀ ⊗ dy_i`,
    where the rows, their type and `x_{F(i)}` are those of the typed_linear
    with the same `from` (and, for a per-head slice, only the diagonal
    blocks are formed). `input` and `grad` have the types of that
    typed_linear's input and result, and the result has the weight's type.
    Lowered to a segmented outer-product GEMM: weights are never replicated
    per row.

    ```mlir
    %dW = hgraph.weight_grad %h from src, %dz
        : !hgraph.node<64xf32>, !hgraph.edge<64xf32> -> !hgraph.weight<edge, 64x64xf32>
    ```
  }];
  let arguments = (ins HGraph_FeatureValue:$input, HGraph_FeatureValue:$grad,
                       HGraph_Endpoint:$from);
  let results = (outs HGraph_WeightType:$result);
  let assemblyFormat = [{
    $input `from` $from `,` $grad attr-dict `:` qualified(type($input)) `,`
    qualified(type($grad)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_TypeSumOp : HGraph_Op<"type_sum", [Pure]> {
  let summary = "per-type sum of rows: the gradient of a typed vector";
  let description = [{
    `w[k] = Σ_{rows i of type k} x_i` into a vector weight: rows are edges
    grouped by edge type (`edge` weight, edge-wise input), nodes grouped by
    node type (`node` weight, node-wise input), or all rows (`single`). It is
    the gradient of `hgraph.typed_vector` with respect to its weight.
  }];
  let arguments = (ins HGraph_FeatureValue:$input);
  let results = (outs HGraph_WeightType:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_ZerosOp : HGraph_Op<"zeros", [Pure, HGraph_RowWise, HGraph_VJP]> {
  let summary = "a value or weight of zeros";
  let description = [{
    Every element is 0. Autodiff returns it as the gradient of an argument
    that the results do not depend on.
  }];
  let results = (outs AnyTypeOf<[HGraph_FeatureValue, HGraph_WeightType]>:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

//===----------------------------------------------------------------------===//
// Graph access
//===----------------------------------------------------------------------===//

def HGraph_GatherOp : HGraph_Op<"gather", [Pure, HGraph_VJP]> {
  let summary = "reads a node-wise value at each edge's source or destination";
  let description = [{
    Row `e = (s → t)` of the edge-wise result is row `s` (`from src`) or row
    `t` (`from dst`) of the node-wise input. This is a conceptual read; it is
    fused into its consumers and never materialized on its own.
  }];
  let arguments = (ins HGraph_NodeValueType:$input, HGraph_Endpoint:$from);
  let results = (outs HGraph_EdgeValueType:$result);
  let assemblyFormat = [{
    $input `from` $from attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_RelationNormOp : HGraph_Op<"relation_norm", [Pure, HGraph_VJP]> {
  let summary = "RGCN's per-relation in-degree normalizer";
  let description = [{
    `c_e = 1 / |{e' = (s' → t) : φ(e') = φ(e)}|` for every edge `e = (s → t)`:
    one over the number of edges of the same type entering the same node.
  }];
  let arguments = (ins HGraph_GraphType:$graph);
  let results = (outs HGraph_EdgeValueType:$result);
  let assemblyFormat = "$graph attr-dict `:` qualified(type($graph)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def HGraph_DegreeNormOp : HGraph_Op<"degree_norm", [Pure, HGraph_VJP]> {
  let summary = "one over the in-degree of each edge's destination";
  let description = [{
    `d_e = 1 / |{e' = (s' → t)}|` for every edge `e = (s → t)`: the weight of
    an edge in `aggregate mean`, used by its gradient.
  }];
  let arguments = (ins HGraph_GraphType:$graph);
  let results = (outs HGraph_EdgeValueType:$result);
  let assemblyFormat = "$graph attr-dict `:` qualified(type($graph)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def HGraph_AggregateOp : HGraph_Op<"aggregate", [Pure, HGraph_VJP]> {
  let summary = "reduces each node's incoming edges";
  let description = [{
    `out[t] = reduce_{e = (s → t)} x[e]` with `sum`, `mean` or `max`. A node
    with no incoming edges gets 0.

    `to src` reduces each node's *outgoing* edges instead
    (`out[s] = Σ_{e = (s → t)} x[e]`, `sum` only): the gradient of a gather
    at the source.
  }];
  let arguments = (ins HGraph_FeatureValue:$input,
                       HGraph_Reduction:$kind,
                       OptionalAttr<HGraph_Endpoint>:$to);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $kind $input (`to` $to^)? attr-dict `:` qualified(type($input)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The endpoint whose node receives each edge's row (dst by default).
    Endpoint getReceiver() { return getTo().value_or(Endpoint::Dst); }
  }];
}

def HGraph_EdgeSoftmaxOp : HGraph_Op<"edge_softmax",
    [Pure, AllTypesMatch<["input", "result"]>, HGraph_VJP]> {
  let summary = "softmax over the incoming edges of each destination";
  let description = [{
    `α[e, j] = exp(x[e, j]) / Σ_{e' = (s' → t)} exp(x[e', j])` for every edge
    `e = (s → t)` and every column `j`, computed stably (the per-destination
    maximum is subtracted first).

    With `by_type` the softmax runs over each (destination, edge type)
    group instead: the sum is over the edges `e' = (s' → t)` with
    `φ(e') = φ(e)` (PyG RGATConv's `attention_mechanism='within-relation'`),
    and each group subtracts its own maximum. A group of one edge gets 1.

    ```mlir
    %alpha = hgraph.edge_softmax %score : !hgraph.edge<4xf32, heads = 4>
    %within = hgraph.edge_softmax %score by_type : !hgraph.edge<4xf32, heads = 4>
    ```
  }];
  let arguments = (ins HGraph_FeatureValue:$input, UnitAttr:$by_type);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $input (`by_type` $by_type^)? attr-dict `:` qualified(type($input))
  }];
  let hasVerifier = 1;
}

def HGraph_GroupSumOp : HGraph_Op<"group_sum",
    [Pure, AllTypesMatch<["input", "result"]>, HGraph_VJP]> {
  let summary = "sum over each edge's (destination, edge type) group";
  let description = [{
    `y[e, j] = Σ_{e' = (s' → t), φ(e') = φ(e)} x[e', j]` for every edge
    `e = (s → t)` and every column `j`: each edge gets the sum of its group
    of `edge_softmax ... by_type`. The gradient of a `by_type` softmax uses
    it (`ds = α ⊙ (dα − group_sum(α ⊙ dα))`); it is its own adjoint.

    ```mlir
    %y = hgraph.group_sum %x : !hgraph.edge<4xf32, heads = 4>
    ```
  }];
  let arguments = (ins HGraph_FeatureValue:$input);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Row-wise math
//===----------------------------------------------------------------------===//

def HGraph_DotOp : HGraph_Op<"dot",
    [Pure, HGraph_RowWise, SameTypeOperands, HGraph_VJP]> {
  let summary = "per-head inner product of two rows";
  let description = [{
    For each row and head `k`, the inner product of feature block `k` of the
    two operands. The result has one column per head: width `H`, `H` heads.
  }];
  let arguments = (ins HGraph_FeatureValue:$lhs, HGraph_FeatureValue:$rhs);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_ScaleOp : HGraph_Op<"scale", [Pure, HGraph_RowWise, HGraph_VJP]> {
  let summary = "scalar times vector, per head";
  let description = [{
    Multiplies feature block `k` of each row of `input` by column `k` of the
    same row of `scale`. `scale` has one column per head of `input`, or a
    single column that applies to every head.
  }];
  let arguments = (ins HGraph_FeatureValue:$scale, HGraph_FeatureValue:$input);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $scale `,` $input attr-dict `:` qualified(type($scale)) `,` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_ConstScaleOp : HGraph_Op<"const_scale",
    [Pure, HGraph_RowWise, AllTypesMatch<["input", "result"]>, HGraph_VJP]> {
  let summary = "multiplies every element by a constant";
  let arguments = (ins HGraph_FeatureValue:$input, F64Attr:$factor);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` qualified(type($input))";
}

def HGraph_ConcatOp : HGraph_Op<"concat", [Pure, HGraph_VJP]> {
  let summary = "concatenates features, head by head";
  let description = [{
    All operands are of the same domain, element type and head count `H`.
    Feature block `k` of the result is the concatenation of feature block `k`
    of every operand, so with `H = 1` this is plain row concatenation.
  }];
  let arguments = (ins Variadic<HGraph_FeatureValue>:$inputs);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$inputs attr-dict `:` qualified(type($inputs)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def HGraph_SliceOp : HGraph_Op<"slice", [Pure, HGraph_RowWise]> {
  let summary = "a range of features, head by head (the inverse of concat)";
  let description = [{
    Feature block `k` of the result is columns `offset .. offset + w - 1` of
    feature block `k` of the input, where `w` is the result's head width.
    Input and result have one domain, element type and head count.
  }];
  let arguments = (ins HGraph_FeatureValue:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $input `offset` $offset attr-dict `:` qualified(type($input)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

class HGraph_ElementwiseBinaryOp<string mnemonic, string what>
    : HGraph_Op<mnemonic, [Pure, HGraph_RowWise, SameOperandsAndResultType,
                           HGraph_VJP]> {
  let summary = "element-wise " # what;
  let arguments = (ins HGraph_FeatureValue:$lhs, HGraph_FeatureValue:$rhs);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` qualified(type($result))";
}

def HGraph_AddOp : HGraph_Op<"add",
    [Pure, HGraph_RowWise, SameOperandsAndResultType, HGraph_VJP]> {
  let summary = "element-wise addition, of values or of weights";
  let description = [{
    Adds two node-wise or edge-wise values row by row, or two weights slice by
    slice (autodiff sums the gradient contributions of a weight used twice).
  }];
  let arguments = (ins AnyTypeOf<[HGraph_FeatureValue, HGraph_WeightType]>:$lhs,
                       AnyTypeOf<[HGraph_FeatureValue, HGraph_WeightType]>:$rhs);
  let results = (outs AnyTypeOf<[HGraph_FeatureValue, HGraph_WeightType]>:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` qualified(type($result))";
}
def HGraph_SubOp : HGraph_ElementwiseBinaryOp<"sub", "subtraction">;
def HGraph_MulOp : HGraph_ElementwiseBinaryOp<"mul", "multiplication">;
def HGraph_DivOp : HGraph_ElementwiseBinaryOp<"div", "division">;
def HGraph_EqualOp : HGraph_ElementwiseBinaryOp<"equal",
    "indicator of equality (1 where lhs == rhs, else 0)">;

class HGraph_ElementwiseUnaryOp<string mnemonic, string what>
    : HGraph_Op<mnemonic, [Pure, HGraph_RowWise, SameOperandsAndResultType,
                           HGraph_VJP]> {
  let summary = "element-wise " # what;
  let arguments = (ins HGraph_FeatureValue:$input);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($result))";
}

def HGraph_ExpOp : HGraph_ElementwiseUnaryOp<"exp", "exponential">;
def HGraph_ReluOp : HGraph_ElementwiseUnaryOp<"relu", "max(x, 0)">;
def HGraph_TanhOp : HGraph_ElementwiseUnaryOp<"tanh", "hyperbolic tangent">;
def HGraph_SigmoidOp : HGraph_ElementwiseUnaryOp<"sigmoid", "logistic sigmoid">;
def HGraph_NegOp : HGraph_ElementwiseUnaryOp<"neg", "negation">;
def HGraph_GeluOp : HGraph_ElementwiseUnaryOp<"gelu",
    "exact GELU: x·Φ(x) = 0.5·x·(1 + erf(x/√2))"> {
  let description = [{
    The exact (erf) GELU, PyTorch's `gelu(x, approximate='none')`, which
    PyG's `HGTConv` applies to the aggregated messages.

    ```mlir
    %y = hgraph.gelu %agg : !hgraph.node<64xf32, heads = 4>
    ```
  }];
}

def HGraph_LeakyReluOp : HGraph_Op<"leaky_relu",
    [Pure, HGraph_RowWise, AllTypesMatch<["input", "result"]>, HGraph_VJP]> {
  let summary = "element-wise leaky ReLU: x if x > 0, else alpha·x";
  let arguments = (ins HGraph_FeatureValue:$input, F64Attr:$alpha);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$input `alpha` $alpha attr-dict `:` qualified(type($input))";
  let hasVerifier = 1;
}

def HGraph_LeakyReluGradOp : HGraph_Op<"leaky_relu_grad",
    [Pure, HGraph_RowWise, AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "gradient of leaky ReLU: grad if input > 0, else alpha·grad";
  let description = [{
    The gradient of `hgraph.leaky_relu %input alpha A` (and of `hgraph.relu`,
    with `alpha 0`) given the gradient `grad` of its result.
  }];
  let arguments = (ins HGraph_FeatureValue:$grad, HGraph_FeatureValue:$input,
                       F64Attr:$alpha);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $grad `,` $input `alpha` $alpha attr-dict `:` qualified(type($input))
  }];
  let hasVerifier = 1;
}

def HGraph_GeluGradOp : HGraph_Op<"gelu_grad",
    [Pure, HGraph_RowWise, AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "gradient of exact GELU: grad·(Φ(x) + x·φ(x))";
  let description = [{
    The gradient of `hgraph.gelu %input` given the gradient `grad` of its
    result, with Φ the standard normal distribution function and φ its
    density: `grad · (0.5·(1 + erf(x/√2)) + x·exp(−x²/2)/√(2π))`.

    ```mlir
    %dx = hgraph.gelu_grad %dy, %x : !hgraph.node<64xf32>
    ```
  }];
  let arguments = (ins HGraph_FeatureValue:$grad, HGraph_FeatureValue:$input);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` qualified(type($input))";
}

def HGraph_DropoutOp : HGraph_Op<"dropout",
    [Pure, HGraph_RowWise, AllTypesMatch<["input", "result"]>, HGraph_VJP]> {
  let summary = "seeded dropout of an edge-wise value";
  let description = [{
    `y[e, j] = keep(seed, e, j) ? x[e, j] · s : 0`, `s = 1 / (1 − p)` rounded
    to the element type, for every edge `e` and column `j` of the edge-wise
    `input`, with `p` in `[0, 1]`. RGAT
    applies it to the attention coefficients after the softmax (PyG's
    `RGATConv(dropout=p)` in training). The mask is a pure function of the
    seed, the edge and the column, so the backward recomputes it instead of
    saving it, and the CPU and the GPU draw the same mask: the gradient is
    `dx = hgraph.dropout dy, seed p P` (the same op on the gradient). `p = 0`
    folds to the input; `p = 1` gives zeros.

    **The mask**, exactly (all arithmetic on unsigned 32-bit integers modulo
    2^32; `^` is xor, `>>` a logical shift):
    ```
    fmix(x) = x ^= x >> 16; x *= 0x85EBCA6B; x ^= x >> 13; x *= 0xC2B2AE35;
              x ^= x >> 16                      (MurmurHash3's finalizer)
    lo, hi  = the low and high 32 bits of the seed (an int64, two's complement)
    k1      = fmix(lo ^ 0x243F6A88)
    k2      = fmix(hi ^ k1 ^ 0x85A308D3)
    c       = n · W + j      n: the caller's index of edge e (its position
                             in the edge arrays given to preprocessing,
                             `edge_perm[e]`), W: the width of x
    r       = fmix(fmix(c ^ k1) + k2)
    keep    = (r >> 8) ≥ ceil(p · 2^24)      i.e. (r >> 8) / 2^24 ≥ p
    ```
    `(r >> 8) / 2^24` is uniform in `[0, 1)` on a 2^-24 grid, so an element
    is kept with probability `1 − p` (rounded up to that grid). For per-head
    attention coefficients (`W = H`) the column is the head. Duplicate
    edges draw apart (their indices differ); the counter wraps modulo 2^32,
    so masks repeat only beyond 2^32 elements.

    ```mlir
    %d = hgraph.dropout %alpha, %seed p 3.000000e-01 : !hgraph.edge<4xf32, heads = 4>
    ```
  }];
  let arguments = (ins HGraph_FeatureValue:$input, HGraph_SeedType:$seed,
                       F64Attr:$p);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $input `,` $seed `p` $p attr-dict `:` qualified(type($input))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Activation offload
//===----------------------------------------------------------------------===//

def HGraph_EvictOp : HGraph_Op<"evict", [MemoryEffects<[MemWrite]>]> {
  let summary = "moves a value out of device memory until the backward";
  let description = [{
    Copies the rows of `value` to the runtime's tensor cache, in host memory
    or on disk (`tier`), under the training step's key for `slot`, and
    releases their device memory. `value` must have no use after the evict
    (its memory is gone); the result may only be returned, so that the
    backward function, which takes it as an argument, brings it back with
    `hgraph.prefetch` of the same slot. `hgraph-offload-scheduling` places it
    after the last forward use of a saved value.

    ```mlir
    %s = hgraph.evict %z to host slot 1 : !hgraph.edge<64xf32> -> !hgraph.stored<!hgraph.edge<64xf32>>
    ```
  }];
  let arguments = (ins HGraph_FeatureValue:$value, HGraph_OffloadTier:$tier,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let results = (outs HGraph_StoredType:$result);
  let assemblyFormat = [{
    $value `to` $tier `slot` $slot attr-dict `:` qualified(type($value)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def HGraph_PrefetchOp : HGraph_Op<"prefetch", [MemoryEffects<[MemRead]>]> {
  let summary = "starts bringing an evicted value back into device memory";
  let description = [{
    Allocates device memory for the value that `stored` holds and starts
    reading its rows back from the tensor cache (slot `slot`); its first
    reader waits for them. `hgraph-offload-scheduling` places it where the
    value fits under the memory capacity early enough to hide the copy. A
    stored value is prefetched at most once per function.

    ```mlir
    %z = hgraph.prefetch %s slot 1 : !hgraph.stored<!hgraph.edge<64xf32>> -> !hgraph.edge<64xf32>
    ```
  }];
  let arguments = (ins HGraph_StoredType:$stored,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let results = (outs HGraph_FeatureValue:$result);
  let assemblyFormat = [{
    $stored `slot` $slot attr-dict `:` qualified(type($stored)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPHOPS_TD
