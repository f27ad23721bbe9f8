// RUN: hector-opt %s --hector-align-workgroup-memory | FileCheck %s

// Every workgroup buffer of an outlined kernel gets 16-byte alignment;
// a larger alignment already there is kept, private buffers are untouched.

gpu.module @kernels {
  // CHECK-LABEL: gpu.func @tiles
  // CHECK-SAME: workgroup(%{{.*}} : memref<64x36xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
  // CHECK-SAME: private(%{{.*}} : memref<4xf32, #gpu.address_space<private>>)
  gpu.func @tiles(%out: memref<?xf32>)
      workgroup(%a : memref<64x36xf32, #gpu.address_space<workgroup>>,
                %b : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
      private(%p : memref<4xf32, #gpu.address_space<private>>) kernel {
    gpu.return
  }
}
