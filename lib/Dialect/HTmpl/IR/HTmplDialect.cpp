//===- HTmplDialect.cpp - htmpl dialect registration ------------*- C++ -*-===//

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hector::htmpl;

#include "hector/Dialect/HTmpl/IR/HTmplDialect.cpp.inc"
#include "hector/Dialect/HTmpl/IR/HTmplEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "hector/Dialect/HTmpl/IR/HTmplAttrs.cpp.inc"

void HTmplDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "hector/Dialect/HTmpl/IR/HTmplOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "hector/Dialect/HTmpl/IR/HTmplAttrs.cpp.inc"
      >();
}
