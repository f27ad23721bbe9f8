//===- HTmplAttrs.td - htmpl enums and attributes ----------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HTMPL_IR_HTMPLATTRS_TD
#define HECTOR_DIALECT_HTMPL_IR_HTMPLATTRS_TD

include "hector/Dialect/HTmpl/IR/HTmplDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def HTmpl_Domain : I32EnumAttr<"Domain", "what a traversal iterates over", [
      I32EnumAttrCase<"Edges", 0, "edges">,
      I32EnumAttrCase<"Nodes", 1, "nodes">
    ]> {
  let cppNamespace = "::hector::htmpl";
}

def HTmpl_Adjacency : I32EnumAttr<"Adjacency",
    "how the edges of a traversal are stored and ordered", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"COO", 1, "coo">,
      I32EnumAttrCase<"CSR", 2, "csr">,
      I32EnumAttrCase<"Pairs", 3, "pairs">
    ]> {
  let cppNamespace = "::hector::htmpl";
}

def HTmpl_AccessScheme : I32EnumAttr<"AccessScheme",
    "how the current edge or node of a traversal selects an operand's row", [
      I32EnumAttrCase<"Edge", 0, "edge">,
      I32EnumAttrCase<"Compact", 1, "compact">,
      I32EnumAttrCase<"Src", 2, "src">,
      I32EnumAttrCase<"Dst", 3, "dst">,
      I32EnumAttrCase<"Node", 4, "node">,
      I32EnumAttrCase<"EdgeType", 5, "etype">,
      I32EnumAttrCase<"NodeType", 6, "ntype">,
      I32EnumAttrCase<"Whole", 7, "whole">
    ]> {
  let cppNamespace = "::hector::htmpl";
  let genSpecializedAttr = 0;
}
def HTmpl_AccessSchemeAttr
    : EnumAttr<HTmpl_Dialect, HTmpl_AccessScheme, "access"> {
  let summary = "row selection of one traversal operand";
  let description = [{
    - `edge`: row = edge id (vanilla edge-wise value);
    - `compact`: row = id of the edge's unique (source, edge type) pair, read
      through the compact mapping (compact materialization);
    - `src` / `dst`: row = the edge's source / destination node;
    - `node`: row = the current node (node traversals);
    - `etype`: row = the edge's type (per-type vectors);
    - `ntype`: row = the current node's type (node traversals);
    - `whole`: no row; the body indexes the whole buffer itself.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def HTmpl_Reduction : I32EnumAttr<"Reduction",
    "how htmpl.accumulate combines a value into its destination", [
      I32EnumAttrCase<"Add", 0, "add">,
      I32EnumAttrCase<"Max", 1, "max">
    ]> {
  let cppNamespace = "::hector::htmpl";
}

#endif // HECTOR_DIALECT_HTMPL_IR_HTMPLATTRS_TD
