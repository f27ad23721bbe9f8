//===- HGraphTypeInterfaces.td - hgraph type interfaces ----*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPHTYPEINTERFACES_TD
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPHTYPEINTERFACES_TD

include "mlir/IR/OpBase.td"

def HGraph_FeatureTypeInterface : TypeInterface<"FeatureType"> {
  let cppNamespace = "::hector::hgraph";
  let description = [{
    A per-row feature value: node-wise or edge-wise, `width` features of one
    element type, split into `heads` equal blocks.
  }];
  let methods = [
    InterfaceMethod<"Number of features per row.", "int64_t", "getWidth">,
    InterfaceMethod<"Number of heads.", "int64_t", "getHeads">,
    InterfaceMethod<"Element type.", "::mlir::Type", "getElementType">,
    InterfaceMethod<"True for edge-wise values.", "bool", "isEdgeWise">,
  ];
  let extraSharedClassDeclaration = [{
    /// Features per head.
    int64_t getHeadWidth() const { return $_type.getWidth() / $_type.getHeads(); }
    /// True when both are node-wise or both edge-wise.
    bool isSameDomain(FeatureType other) const {
      return $_type.isEdgeWise() == other.isEdgeWise();
    }
  }];
}

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPHTYPEINTERFACES_TD
