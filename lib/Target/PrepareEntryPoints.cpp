//===- PrepareEntryPoints.cpp - entry points checked and marked -*- C++ -*-===//
//
// The pass form of prepareEntryPoints (EntryPoints.h), for the registered
// pipelines: hectorc calls the function itself, since it keeps the entries'
// descriptions for the manifest.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/EntryPoints.h"
#include "hector/Target/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace hector {
#define GEN_PASS_DEF_PREPAREENTRYPOINTS
#include "hector/Target/Passes.h.inc"
} // namespace hector

namespace {

class PrepareEntryPointsPass
    : public hector::impl::PrepareEntryPointsBase<PrepareEntryPointsPass> {
public:
  void runOnOperation() override {
    if (mlir::failed(hector::prepareEntryPoints(getOperation())))
      signalPassFailure();
  }
};

} // namespace
