// RUN: hector-opt %s --split-input-file --hector-prepare-entry-points --verify-diagnostics | FileCheck %s

// The public functions with a body are the entry points when none is marked
// hector.entry: each is marked for its C interface; declarations are not.
// CHECK-LABEL: func.func private @helper(memref<?xf32>)
// CHECK-NOT: llvm.emit_c_interface
// CHECK-LABEL: func.func @scale(
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func private @helper(memref<?xf32>)
func.func @scale(%x: memref<?xf32> {hector.arg = {name = "x", role = "input"}},
                 %y: memref<?xf32> {hector.arg = {name = "y", role = "output"}}) {
  return
}

// -----

// Only the functions marked hector.entry are entry points when one is.
// CHECK-LABEL: func.func @inner(
// CHECK-NOT: llvm.emit_c_interface
// CHECK-LABEL: func.func @outer(
// CHECK-SAME: llvm.emit_c_interface
func.func @inner(%x: memref<4xf32>) {
  return
}
func.func @outer(%x: memref<4xf32>) attributes {hector.entry} {
  return
}

// -----

// expected-error @+1 {{entry point 'f' must return nothing}}
func.func @f(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

// expected-error @+1 {{entry point 'g' argument 0 must be a memref, got 'f32'}}
func.func @g(%x: f32) {
  return
}

// -----

// expected-error @+1 {{no entry point: the module has no public func.func with a body}}
module {
  func.func private @only_a_declaration(memref<4xf32>)
}
