//===- InitAll.h - register Hector's dialects and passes --------*- C++ -*-===//

#ifndef HECTOR_INITALL_H
#define HECTOR_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace hector {

/// Adds Hector's dialects and the upstream dialects its pipelines produce.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers Hector's passes with the global pass registry (for
/// command-line pipelines).
void registerAllPasses();

} // namespace hector

#endif // HECTOR_INITALL_H
