//===- HTmpl.h - Hector intra-operator dialect ------------------*- C++ -*-===//
//
// Entry header of the htmpl dialect: dialect, enums, attributes and ops.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HTMPL_IR_HTMPL_H
#define HECTOR_DIALECT_HTMPL_IR_HTMPL_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "hector/Dialect/HTmpl/IR/HTmplDialect.h.inc"
#include "hector/Dialect/HTmpl/IR/HTmplEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "hector/Dialect/HTmpl/IR/HTmplAttrs.h.inc"

#define GET_OP_CLASSES
#include "hector/Dialect/HTmpl/IR/HTmplOps.h.inc"

#endif // HECTOR_DIALECT_HTMPL_IR_HTMPL_H
