//===- HTmplDialect.td - Hector intra-operator dialect -----*- tablegen -*-===//
//
// The intra-operator level: instances of the two kernel templates (GEMM and
// traversal) over concrete buffers with explicit access schemes.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HTMPL_IR_HTMPLDIALECT_TD
#define HECTOR_DIALECT_HTMPL_IR_HTMPLDIALECT_TD

include "mlir/IR/OpBase.td"

def HTmpl_Dialect : Dialect {
  let name = "htmpl";
  let cppNamespace = "::hector::htmpl";
  let summary = "Intra-operator IR: GEMM and traversal template instances";
  let description = [{
    `htmpl` is what the inter-operator IR (`hgraph`) is lowered to: every
    operation is one instance of a kernel template over buffers (`memref`s)
    whose layout is now fixed.

    - `htmpl.gemm`: a tiled matrix multiply whose input rows are gathered
      through an index list, whose output rows are scattered through another,
      whose weight is chosen per segment of rows by type (never replicated),
      with an optional per-row scalar in the epilogue and atomic stores.
    - `htmpl.traversal`: a loop over the edges (in COO or CSR order) or the
      nodes of the graph. Each operand says how the current edge or node picks
      its row (its access scheme); the body computes with upstream `arith`,
      `math`, `scf` and `memref` ops on those rows and reduces into outputs
      with `htmpl.accumulate`.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class HTmpl_Op<string mnemonic, list<Trait> traits = []>
    : Op<HTmpl_Dialect, mnemonic, traits>;

#endif // HECTOR_DIALECT_HTMPL_IR_HTMPLDIALECT_TD
