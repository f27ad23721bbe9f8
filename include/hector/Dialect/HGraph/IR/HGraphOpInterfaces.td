//===- HGraphOpInterfaces.td - hgraph op interfaces --------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_HGRAPHOPINTERFACES_TD
#define HECTOR_DIALECT_HGRAPH_IR_HGRAPHOPINTERFACES_TD

include "mlir/IR/OpBase.td"

def HGraph_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::hector::hgraph";
  let description = [{
    An op that `hgraph-autodiff` can differentiate: it knows its
    vector-Jacobian rule. Given the gradient of its (single) result, the
    rule adds the gradient contribution of every active operand, written
    with hgraph ops, so that the backward lowers like the forward.

    The rule builds through a `PullbackBuilder`
    (`hector/Dialect/HGraph/IR/PullbackBuilder.h`), which autodiff
    implements: it places the new ops at the end of the backward body,
    gives the backward's copy of any forward value (an argument, a saved
    value or a recomputation, as the save policy decides), tells which
    operands are active, and sums the contributions of a value used
    several times. An op with an active result that lacks the interface
    is reported (`no gradient rule`); so are the cases a rule does not
    cover, by the rule itself.
  }];
  let methods = [
    InterfaceMethod<[{
        Adds, through `builder`, the gradient contribution of each active
        operand given `resultCotangent`, the gradient of the op's result in
        the backward body. Fails, with a diagnostic on the op, for a case
        the rule does not cover.
      }],
      "::mlir::LogicalResult", "buildPullback",
      (ins "::hector::hgraph::PullbackBuilder &":$builder,
           "::mlir::Value":$resultCotangent)>,
  ];
}

#endif // HECTOR_DIALECT_HGRAPH_IR_HGRAPHOPINTERFACES_TD
