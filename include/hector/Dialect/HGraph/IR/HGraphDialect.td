//===- HGraphDialect.td - Hector inter-operator dialect ----*- tablegen -*-===//
//
// The inter-operator level: model semantics over conceptual node-wise and
// edge-wise values of one heterogeneous graph, with no data layout in them.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPHDIALECT_TD
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPHDIALECT_TD

include "mlir/IR/OpBase.td"

def HGraph_Dialect : Dialect {
  let name = "hgraph";
  let cppNamespace = "::hector::hgraph";
  let summary = "Inter-operator IR of relational GNN models";
  let description = [{
    `hgraph` expresses one layer of a relational graph neural network (RGCN,
    RGAT, HGT or a user-defined variant) as operations on *conceptual*
    variables: a value of type `!hgraph.node<...>` has one row per node of the
    graph, a value of type `!hgraph.edge<...>` one row per edge. Nothing in the
    semantics says how rows are stored; the materialization of an edge-wise
    value is a separate, discardable attribute (`hgraph.materialization`) that
    passes may change without touching the math.

    The graph is heterogeneous: every node `v` has a node type `τ(v)`, every
    edge `e = (s → t)` an edge type `φ(e)`. Weights are typed: a
    `!hgraph.weight<edge, ...>` holds one slice per edge type, a
    `!hgraph.weight<node, ...>` one slice per node type, and a
    `!hgraph.weight<single, ...>` exactly one.

    Linear maps use the row-vector convention `y = x · W` with `W` of shape
    `[in, out]`. A rank-3 weight slice `[H, in/H, out/H]` is block-diagonal:
    head `k` maps feature block `k` of the input to feature block `k` of the
    output. A value with `heads = H` splits its `width` features into `H`
    contiguous blocks of `width / H`.

    An argument of an `hgraph.func` may carry `{hgraph.name = "h"}`: the name
    the compiled entry point and its manifest give that argument.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that records how an edge-wise result
    /// is materialized (see MaterializationAttr).
    static constexpr llvm::StringLiteral getMaterializationAttrName() {
      return llvm::StringLiteral("hgraph.materialization");
    }
  private:
    void registerTypes();
    void registerAttributes();
  public:
  }];
}

class HGraph_Op<string mnemonic, list<Trait> traits = []>
    : Op<HGraph_Dialect, mnemonic, traits>;

// Row-wise ops: each row of the result (one edge's or one node's features)
// is a function of the same row of the operands alone (and of per-type
// weights), so a traversal may evaluate the op inside its body, row by
// row, instead of storing its result (hgraph-to-htmpl's fusion, and
// hgraph::isRowWise for the storage decisions). An op that can also make a
// weight (add, zeros) is row-wise only where its result is a row value.
def HGraph_RowWise : NativeOpTrait<"RowWise"> {
  let cppNamespace = "::hector::hgraph::OpTrait";
}

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPHDIALECT_TD
