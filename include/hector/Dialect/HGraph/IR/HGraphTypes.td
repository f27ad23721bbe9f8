//===- HGraphTypes.td - hgraph types -----------------------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPHTYPES_TD
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPHTYPES_TD

include "hector/Dialect/HGraph/IR/HGraphAttrs.td"
include "hector/Dialect/HGraph/IR/HGraphTypeInterfaces.td"
include "mlir/IR/AttrTypeBase.td"

class HGraph_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<HGraph_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def HGraph_GraphType : HGraph_Type<"Graph", "graph"> {
  let summary = "a heterogeneous graph";
  let description = [{
    The graph the model runs on: node types, edge types and the edges. A
    `hgraph.func` takes exactly one. Its layout (COO, CSR, type-sorted order,
    compact mappings) is chosen by the compiler and built by the runtime.
  }];
}

class HGraph_FeatureValueType<string name, string typeMnemonic, string domain>
    : HGraph_Type<name, typeMnemonic,
                  [HGraph_FeatureTypeInterface]> {
  let parameters = (ins "int64_t":$width, "::mlir::Type":$elementType,
                        "int64_t":$heads);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "int64_t":$width,
        "::mlir::Type":$elementType, CArg<"int64_t", "1">:$heads), [{
      return $_get(elementType.getContext(), width, elementType, heads);
    }]>
  ];
  let extraClassDeclaration = [{
    bool isEdgeWise() const { return }] # !if(!eq(domain, "edge"), "true", "false") # [{; }
  }];
}

def HGraph_NodeValueType : HGraph_FeatureValueType<"NodeValue", "node", "node"> {
  let summary = "a value with one row per node";
  let description = [{
    Syntax: `!hgraph.node<WIDTH x ELEMENT-TYPE (, heads = H)?>`, for example
    `!hgraph.node<64xf32>` or `!hgraph.node<64xf32, heads = 4>`. `H` must
    divide `WIDTH`; the element type is a float type.
  }];
}

def HGraph_EdgeValueType : HGraph_FeatureValueType<"EdgeValue", "edge", "edge"> {
  let summary = "a value with one row per edge";
  let description = [{
    Syntax: `!hgraph.edge<WIDTH x ELEMENT-TYPE (, heads = H)?>`. Per-head
    scalars such as attention scores have `WIDTH == H`.
  }];
}

def HGraph_WeightType : HGraph_Type<"Weight", "weight"> {
  let summary = "a typed weight";
  let description = [{
    Syntax: `!hgraph.weight<INDEX, SHAPE x ELEMENT-TYPE>` where `INDEX` is
    `single`, `node` (one slice per node type) or `edge` (one slice per edge
    type), and `SHAPE` is the shape of one slice:
    - `[n]`: a vector (attention vectors `a_r`, per-head scales `μ_r`);
    - `[in, out]`: a matrix applied as `x · W`;
    - `[H, in/H, out/H]`: per-head blocks of a block-diagonal matrix.
  }];
  let parameters = (ins "WeightIndex":$index,
                        ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isVector() const { return getShape().size() == 1; }
    bool isMatrix() const { return getShape().size() == 2; }
    bool isPerHead() const { return getShape().size() == 3; }
    /// Input width of a matrix or per-head weight (in), or the length of a vector.
    int64_t getInputWidth() const;
    /// Output width of a matrix or per-head weight (out), or the length of a vector.
    int64_t getOutputWidth() const;
  }];
}

def HGraph_StoredType : HGraph_Type<"Stored", "stored"> {
  let summary = "a node-wise or edge-wise value kept outside device memory";
  let description = [{
    Syntax: `!hgraph.stored<VALUE-TYPE>`, for example
    `!hgraph.stored<!hgraph.edge<64xf32>>`. The result of `hgraph.evict`:
    the value's rows live in the runtime's tensor cache (host memory or
    disk) until `hgraph.prefetch` brings them back. A training forward
    returns it and the matching backward takes it as an argument; nothing
    but `hgraph.prefetch` and `hgraph.return` may use it, so no operation can
    read the rows before they are back.
  }];
  let parameters = (ins "::hector::hgraph::FeatureType":$valueType);
  let assemblyFormat = "`<` qualified($valueType) `>`";
}

def HGraph_SeedType : HGraph_Type<"Seed", "seed"> {
  let summary = "a random seed read at run time";
  let description = [{
    Syntax: `!hgraph.seed`. A 64-bit seed that the caller passes on every
    call (the entry point's argument is a `memref<1xi64>`, shape `[1]`,
    dtype int64, role `input`), so that one compiled library draws a new
    random mask per call. Only `hgraph.dropout` reads it; it has no
    gradient.
  }];
}

def HGraph_FeatureValue : Type<
    CPred<"::llvm::isa<::hector::hgraph::FeatureType>($_self)">,
    "node-wise or edge-wise value", "::hector::hgraph::FeatureType">;

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPHTYPES_TD
