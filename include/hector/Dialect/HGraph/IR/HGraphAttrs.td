//===- HGraphAttrs.td - hgraph enums and attributes --------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPHATTRS_TD
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPHATTRS_TD

include "hector/Dialect/HGraph/IR/HGraphDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def HGraph_WeightIndex : I32EnumAttr<"WeightIndex",
    "what selects the slice of a typed weight", [
      I32EnumAttrCase<"Single", 0, "single">,
      I32EnumAttrCase<"NodeType", 1, "node">,
      I32EnumAttrCase<"EdgeType", 2, "edge">
    ]> {
  let cppNamespace = "::hector::hgraph";
  let genSpecializedAttr = 0;
}

def HGraph_Endpoint : I32EnumAttr<"Endpoint",
    "where an operation reads its input from", [
      I32EnumAttrCase<"Node", 0, "node">,
      I32EnumAttrCase<"Src", 1, "src">,
      I32EnumAttrCase<"Dst", 2, "dst">,
      I32EnumAttrCase<"Edge", 3, "edge">
    ]> {
  let cppNamespace = "::hector::hgraph";
}

def HGraph_Reduction : I32EnumAttr<"Reduction",
    "how incoming edges are combined into their destination node", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Mean", 1, "mean">,
      I32EnumAttrCase<"Max", 2, "max">
    ]> {
  let cppNamespace = "::hector::hgraph";
}

def HGraph_Materialization : I32EnumAttr<"Materialization",
    "how the rows of an edge-wise value are stored", [
      I32EnumAttrCase<"Vanilla", 0, "vanilla">,
      I32EnumAttrCase<"Compact", 1, "compact">
    ]> {
  let cppNamespace = "::hector::hgraph";
  let genSpecializedAttr = 0;
}
def HGraph_MaterializationAttr
    : EnumAttr<HGraph_Dialect, HGraph_Materialization, "materialization"> {
  let summary = "data layout of an edge-wise value";
  let description = [{
    Attached to an operation as the discardable attribute
    `hgraph.materialization`. `vanilla` stores one row per edge. `compact`
    stores one row per unique (source node, edge type) pair and is only legal
    on values that depend on nothing but the source node and the edge type
    (compact materialization, Hector §3). On `hgraph.weight_grad ... from
    src` of an edge-typed weight, `compact` sums the gradient rows of each
    (source node, edge type) pair before the outer product, which then runs
    over the pairs instead of the edges. It never changes what is computed.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def HGraph_OffloadTier : I32EnumAttr<"OffloadTier",
    "where an evicted value is kept until the backward reads it", [
      I32EnumAttrCase<"Host", 0, "host">,
      I32EnumAttrCase<"Disk", 1, "disk">
    ]> {
  let cppNamespace = "::hector::hgraph";
}

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPHATTRS_TD
