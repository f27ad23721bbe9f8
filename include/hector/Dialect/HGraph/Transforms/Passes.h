//===- Passes.h - hgraph transformations -------------------------*- C++ -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_H
#define HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_H

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hector {

#define GEN_PASS_DECL
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"

} // namespace hector

#endif // HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_H
