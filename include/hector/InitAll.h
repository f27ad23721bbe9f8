//===- InitAll.h - register Hector's dialects and passes --------*- C++ -*-===//

#ifndef HECTOR_INITALL_H
#define HECTOR_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace hector {

/// Adds Hector's dialects and the upstream dialects its pipelines produce.
void registerAllDialects(mlir::DialectRegistry &registry);

} // namespace hector

#endif // HECTOR_INITALL_H
