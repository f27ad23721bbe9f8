// The backends reject what they cannot compile with a located error and a
// non-zero exit status; `not` also fails if hectorc crashes instead.

// RUN: rm -rf %t && split-file --leading-lines %s %t
// RUN: not hectorc %t/results.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=RESULTS
// RUN: not hectorc %t/scalar.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not hectorc %t/layout.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not hectorc %t/i1.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=ELEMENT
// RUN: not hectorc %t/role.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=ROLE
// RUN: not hectorc %t/rank.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not hectorc %t/symbol.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=SYMBOL
// RUN: not hectorc %t/size.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not hectorc %t/key.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: not hectorc %t/twice.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not hectorc %t/private.mlir --emit=llvm 2>&1 | FileCheck %s --check-prefix=NOENTRY
// RUN: not hectorc %t/reduce.mlir --target=cuda --emit=gpu 2>&1 | FileCheck %s --check-prefix=REDUCE
// RUN: not hectorc %t/host.mlir --target=cuda --emit=gpu 2>&1 | FileCheck %s --check-prefix=HOST
// RUN: not hectorc %t/alloca.mlir --target=cuda --emit=gpu 2>&1 | FileCheck %s --check-prefix=ALLOCA
// RUN: hectorc %t/reduce.mlir --target=cpu -o %t/libreduce.so
// RUN: not hectorc %t/ok.mlir --emit=gpu 2>&1 | FileCheck %s --check-prefix=GPUCPU
// RUN: not hectorc %t/ok.mlir --target=cpu --emit=ptx 2>&1 | FileCheck %s --check-prefix=PTXCPU
// RUN: not hectorc %t/ok.mlir --target=cpu 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: not hectorc %t/ok.mlir --target=cpu -o %t/missing/lib.so 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: not hectorc %t/ok.mlir --opt-level=7 --emit=llvm 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not hectorc %t/ok.mlir --target=cpu --cpu=pentium9 --emit=llvmir 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not hectorc %t/ok.mlir --target=cuda --gpu-block-size=2048 --emit=gpu 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not hectorc %t/ok.mlir --target=cpu --precision=tf32 --emit=llvmir 2>&1 | FileCheck %s --check-prefix=TF32CPU
// RUN: not hectorc %t/ok.mlir --target=cuda --runtime-lib=%t/none.so -o %t/libok.so 2>&1 | FileCheck %s --check-prefix=RUNTIME
// RUN: not hectorc %t/ok.mlir --target=cpu --cc=%t/no-such-cc -o %t/libok.so 2>&1 | FileCheck %s --check-prefix=CC
// RUN: not test -e %t/libok.so
// RUN: not hectorc %t/ok.mlir --target=cuda --gpu-arch=sm_1 --emit=ptx 2>&1 | FileCheck %s --check-prefix=ARCH
// LLVM's NVPTX backend would abort the process on these: checked first.
// RUN: not hectorc %t/ok.mlir --target=cuda --gpu-features=+ptx60 --emit=ptx 2>&1 | FileCheck %s --check-prefix=PTX60
// RUN: not hectorc %t/ok.mlir --target=cuda --gpu-features=ptx80 --emit=ptx 2>&1 | FileCheck %s --check-prefix=FEATURES
// RUN: hectorc --help | FileCheck %s --check-prefix=HELP

// RESULTS: results.mlir:[[# @LINE + 2]]:1: error: entry point 'f' must return nothing
//--- results.mlir
func.func @f(%x: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<?xf32>
  return %v : f32
}

// ELEMENT: i1.mlir:[[# @LINE + 2]]:1: error: entry point 'f' argument 0 has an unsupported element type 'i1'
//--- i1.mlir
func.func @f(%x: memref<?xi1>) {
  return
}

// SCALAR: scalar.mlir:[[# @LINE + 2]]:1: error: entry point 'f' argument 1 must be a memref, got 'f32'
//--- scalar.mlir
func.func @f(%x: memref<?xf32>, %a: f32) {
  return
}

// LAYOUT: layout.mlir:[[# @LINE + 2]]:1: error: entry point 'f' argument 0 must have the identity (row-major, contiguous) layout
//--- layout.mlir
func.func @f(%x: memref<?xf32, strided<[2]>>) {
  return
}

// ROLE: role.mlir:[[# @LINE + 2]]:1: error: argument 0: 'hector.arg' role must be one of "graph", "input", "weight", "output", "saved", "grad_output", "grad"; got "feature"
//--- role.mlir
func.func @f(%x: memref<?xf32> {hector.arg = {role = "feature"}}) {
  return
}

// RANK: rank.mlir:[[# @LINE + 2]]:1: error: argument 0: 'hector.arg' shape must be an array of 2 entries (the memref's rank), got ["N"]
//--- rank.mlir
func.func @f(%x: memref<?x4xf32> {hector.arg = {shape = ["N"]}}) {
  return
}

// SYMBOL: symbol.mlir:[[# @LINE + 2]]:1: error: argument 0: 'hector.arg' shape entry 0 must be a symbol such as "E" or "N+1", got "2N"
//--- symbol.mlir
func.func @f(%x: memref<?xf32> {hector.arg = {shape = ["2N"]}}) {
  return
}

// SIZE: size.mlir:[[# @LINE + 2]]:1: error: argument 0: 'hector.arg' shape entry 1 is 8 but the memref dimension is 4
//--- size.mlir
func.func @f(%x: memref<?x4xf32> {hector.arg = {shape = ["N", 8]}}) {
  return
}

// KEY: key.mlir:[[# @LINE + 2]]:1: error: argument 0: 'hector.arg' has an unknown key 'dtype' (expected role, name, shape, host_resident)
//--- key.mlir
func.func @f(%x: memref<?xf32> {hector.arg = {dtype = "float32"}}) {
  return
}

// TWICE: twice.mlir:[[# @LINE + 2]]:1: error: entry point 'f' has two arguments named 'h'
//--- twice.mlir
func.func @f(%x: memref<?xf32> {hector.arg = {name = "h"}}, %y: memref<?xf32> {hector.arg = {name = "h"}}) {
  return
}

// NOENTRY: error: no entry point: the module has no public func.func with a body
//--- private.mlir
func.func private @f(%x: memref<?xf32>) {
  return
}

// REDUCE: reduce.mlir:[[# @LINE + 7]]:10: error: a parallel loop with reductions cannot be mapped to GPU threads
//--- reduce.mlir
func.func @f(%x: memref<?xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %sum = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %v = memref.load %x[%i] : memref<?xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  memref.store %sum, %out[%c0] : memref<1xf32>
  return
}

// HOST: host.mlir:[[# @LINE + 4]]:8: error: host code would access device memory here
//--- host.mlir
func.func @f(%x: memref<?xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<?xf32>
  memref.store %v, %out[%c0] : memref<1xf32>
  return
}

// ALLOCA: alloca.mlir:[[# @LINE + 10]]:10: error: a GPU kernel cannot use host memory
//--- alloca.mlir
func.func @f(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %t = memref.alloca() : memref<1xf32>
  memref.store %one, %t[%c0] : memref<1xf32>
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %t[%c0] : memref<1xf32>
    memref.store %v, %x[%i] : memref<?xf32>
  }
  return
}

// GPUCPU: hectorc: error: --emit=gpu needs --target=cuda
// PTXCPU: hectorc: error: --emit=ptx needs --target=cuda
// NOOUT: hectorc: error: --emit=lib writes a shared library: give it a file with -o lib<model>.so
// NODIR: hectorc: error: cannot write {{.*}}missing/lib.so: the directory '{{.*}}missing' does not exist
// OPT: hectorc: error: --opt-level must be 0, 1, 2 or 3
// CPU: hectorc: error: unknown --cpu=pentium9 for x86_64{{.*}} (portable, native, or an LLVM CPU name such as x86-64-v3)
// BLOCK: hectorc: error: --gpu-block-size must be in [1, 1024]
// TF32CPU: hectorc: error: --precision=tf32 needs --target=cuda (the CPU GEMMs multiply in fp32)
// RUNTIME: hectorc: error: libhector_runtime.so not found at '{{.*}}none.so'
// CC: hectorc: error: linking failed ({{.*}}no-such-cc -shared
// ARCH: hectorc: error: unsupported --gpu-arch=sm_1 (one of: sm_50,
// PTX60: hectorc: error: sm_90 needs PTX ISA 7.8 or newer: pass --gpu-features=+ptx78 (or newer)
// FEATURES: hectorc: error: --gpu-features must be +ptxNN
// HELP: --cc=<program>
// HELP: --cpu=<portable|native|name>
// HELP: --cuda-path=<dir>
// HELP: --emit=<value>
// HELP: =htmpl
// HELP: =loops
// HELP: =gpu
// HELP: =llvm
// HELP: =llvmir
// HELP: =ptx
// HELP: =lib
// HELP: --gpu-arch=<sm_XY>
// HELP: --gpu-block-size=
// HELP: --gpu-templates
// HELP: --runtime-lib=<path>
// HELP: --target=<value>
// HELP: =cpu
// HELP: =cuda
//--- ok.mlir
func.func @f(%x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %y[%i] : memref<?xf32>
  }
  return
}
