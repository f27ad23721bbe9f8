//===- Passes.td - hgraph transformations ------------------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_TD
#define HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def HGraphAutodiff : Pass<"hgraph-autodiff", "mlir::ModuleOp"> {
  let summary = "derives a training forward and a backward function from each "
                "hgraph.func";
  let description = [{
    For every `hgraph.func @f` (one without an `hgraph.kind` attribute) this
    adds two functions next to it and keeps `@f` for inference:

    - `@f_fwd` computes the results of `@f` and, as extra results, the
      forward values that the backward reads (role `saved`);
    - `@f_bwd` takes the arguments of `@f` that the backward reads, the saved
      values and one gradient per result of `@f` (role `grad_output`,
      `d_result<i>`), and returns the gradient of every differentiable
      argument (role `grad`, `d_<name>`), built from the vector-Jacobian
      rule of each op in reverse order. Gradient contributions of a value
      used several times are summed with `hgraph.add`; an argument the
      results do not depend on gets `hgraph.zeros`.

    Which forward values are saved and which are recomputed inside `@f_bwd`
    is explicit in the IR: saved values are results of `@f_fwd` and
    arguments of `@f_bwd`; recomputed ones are ordinary ops of `@f_bwd`.
    `save` picks the policy:
    - `materialized` (default): save what the forward stores anyway (the
      results of `typed_linear`, `aggregate`, `edge_softmax`, `concat`) and
      recompute row-wise math, which fuses into the backward traversals;
    - `all`: save every forward value the backward reads;
    - `none`: save nothing; the backward recomputes from the arguments.
    Graph constants (`relation_norm`, `degree_norm`) and weight reads
    (`typed_vector`) are always recomputed.

    `wrt` restricts the gradients to the named arguments (`hgraph.name`, or
    `arg<k>` for argument k); by default every argument but the graph is
    differentiated.
  }];
  let options = [
    Option<"save", "save", "std::string", /*default=*/"\"materialized\"",
           "which forward values the backward reads from memory: "
           "materialized | all | none">,
    ListOption<"wrt", "wrt", "std::string",
               "names of the arguments to differentiate (default: all)">
  ];
  let dependentDialects = ["hector::hgraph::HGraphDialect"];
}

#endif // HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_TD
