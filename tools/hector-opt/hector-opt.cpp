//===- hector-opt.cpp - Hector's optimizer driver ---------------*- C++ -*-===//
//
// mlir-opt with Hector's dialects, passes and pipelines: the tool behind the
// lit tests.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // Upstream passes and dialects are all available so that lit tests can run
  // any upstream pipeline on what Hector's passes produce; hectorc's lowering
  // is there as hector-cpu-pipeline and hector-cuda-pipeline, with the LLVM
  // IR translations its GPU binaries need.
  hector::registerTargetPasses();
  mlir::DialectRegistry registry;
  hector::registerTargetDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Hector optimizer driver\n", registry));
}
