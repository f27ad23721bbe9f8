//===- hector-opt.cpp - Hector's optimizer driver ---------------*- C++ -*-===//
//
// mlir-opt with Hector's dialects and passes: the tool behind the lit tests.
//
//===----------------------------------------------------------------------===//

#include "hector/InitAll.h"
#include "hector/Target/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  hector::registerAllPasses();
  hector::registerBackendPasses();
  mlir::DialectRegistry registry;
  // Upstream dialects and passes are all available so that lit tests can run
  // any upstream pipeline on what Hector's passes produce.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  hector::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Hector optimizer driver\n", registry));
}
