//===- InitAll.cpp - register Hector's dialects and passes ------*- C++ -*-===//

#include "hector/InitAll.h"

#include "hector/Conversion/Passes.h"
#include "hector/Dialect/HGraph/IR/HGraph.h"
#include "hector/Dialect/HGraph/Transforms/Passes.h"
#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

void hector::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<hgraph::HGraphDialect, htmpl::HTmplDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect>();
}

void hector::registerAllPasses() {
  registerHGraphTransformsPasses();
  registerHectorConversionPasses();
}
