// REQUIRES: ptxas
// --emit=lib: the shared library, its manifest, and its dependencies, which
// are libc/libm (cpu) or libhector_runtime.so found beside it (cuda), never
// LLVM or MLIR.

// RUN: rm -rf %t && mkdir -p %t/cpu %t/cuda
// RUN: hectorc %s --target=cpu -o %t/cpu/libmodel.so
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/cpu/libmodel.so.json
// RUN: readelf -d %t/cpu/libmodel.so | FileCheck %s --check-prefix=CPUDEPS
// RUN: nm -D --defined-only %t/cpu/libmodel.so | FileCheck %s --check-prefix=SYMBOLS
// RUN: nm -D --defined-only %t/cpu/libmodel.so | FileCheck %s --check-prefix=HIDDEN
// --target alone, or an -o ending in .so, means --emit=lib.
// RUN: hectorc %s -o %t/cpu/libdefault.so && test -f %t/cpu/libdefault.so.json
// RUN: hectorc %s --target=cuda --runtime-lib=%hector_obj_root/runtime/libhector_runtime.so -o %t/cuda/libmodel.so
// RUN: FileCheck %s --check-prefix=CUDAMANIFEST < %t/cuda/libmodel.so.json
// RUN: readelf -d %t/cuda/libmodel.so | FileCheck %s --check-prefix=CUDADEPS
// RUN: test -f %t/cuda/libhector_runtime.so
// RUN: ldd %t/cuda/libmodel.so | FileCheck %s --check-prefix=LDD

// MANIFEST: "format": "hector-library-manifest",
// MANIFEST: "hectorc_version":
// MANIFEST: "target": "cpu",
// MANIFEST: "gpu_arch": null,
// MANIFEST: "library": "libmodel.so",
// MANIFEST: "name": "aggregate",
// MANIFEST: "symbol": "_mlir_ciface_aggregate",
// MANIFEST: "preprocessing": [
// MANIFEST-NEXT: "csr_row_ptr",
// MANIFEST-NEXT: "csr_src"
// MANIFEST-NEXT: ],
// MANIFEST: "role": "graph",
// MANIFEST-NEXT: "name": "csr_row_ptr",
// MANIFEST-NEXT: "dtype": "int32",
// MANIFEST-NEXT: "rank": 1,
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: "N+1"
// MANIFEST: "role": "weight",
// MANIFEST-NEXT: "name": "scale",
// MANIFEST-NEXT: "dtype": "float32",
// MANIFEST-NEXT: "rank": 1,
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: 8
// MANIFEST: "role": "output",
// MANIFEST-NEXT: "name": "out",
// Without hector.arg, names and roles are derived.
// MANIFEST: "name": "double",
// MANIFEST: "role": "input",
// MANIFEST-NEXT: "name": "arg0",
// MANIFEST-NEXT: "dtype": "float64",
// MANIFEST-NEXT: "rank": 1,
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: null
// MANIFEST: "role": "output",
// MANIFEST-NEXT: "name": "arg1",

// Nothing but libc/libm may be needed: the thread pool is the library's
// own (pthreads are in libc), no OpenMP runtime.
// CPUDEPS: Dynamic section
// CPUDEPS-NOT: NEEDED{{.*}}{{LLVM|MLIR|hector|cuda|stdc|omp}}
// CPUDEPS: (FINI)

// SYMBOLS-DAG: T _mlir_ciface_aggregate
// SYMBOLS-DAG: T _mlir_ciface_double

// The CPU runtime and the per-CPU versions of the code stay inside, but
// for the temporaries' counters and cap and the calling thread's status
// (runtime/include/hector/temporaries.h).
// SYMBOLS-DAG: T hector_cpu_peak_temporary_bytes
// SYMBOLS-DAG: T hector_cpu_reset_peak_temporary_bytes
// SYMBOLS-DAG: T hector_cpu_temporary_bytes
// SYMBOLS-DAG: T hector_cpu_set_temporary_cap
// SYMBOLS-DAG: T hector_cpu_temporary_cap
// SYMBOLS-DAG: T hector_cpu_status
// SYMBOLS-DAG: T hector_cpu_error
// SYMBOLS-DAG: T hector_cpu_clear
// HIDDEN-NOT: hector_cpu_{{parallel|num_threads|level}}
// HIDDEN-NOT: _mlir_memref_to_llvm
// HIDDEN-NOT: x86-64

// CUDAMANIFEST: "target": "cuda",
// CUDAMANIFEST: "gpu_arch": "sm_90",
// CUDAMANIFEST: "runtime": "libhector_runtime.so",

// CUDADEPS-NOT: NEEDED{{.*}}{{LLVM|MLIR|cuda}}
// CUDADEPS: (NEEDED) Shared library: [libhector_runtime.so]
// CUDADEPS-NOT: NEEDED{{.*}}{{LLVM|MLIR|cuda}}
// CUDADEPS: (RUNPATH) Library runpath: [$ORIGIN]

// LDD: libhector_runtime.so => {{.*}}cuda/libhector_runtime.so
// LDD-NOT: libLLVM
// LDD-NOT: libMLIR
// LDD-NOT: libcuda

// No function is marked hector.entry, so both public ones are entry points.

// out[t, f] = scale[f] * sum of h[csr_src[k], f] over the incoming slots k of t
func.func @aggregate(
    %row_ptr: memref<?xi32> {hector.arg = {role = "graph", name = "csr_row_ptr", shape = ["N+1"]}},
    %col: memref<?xi32> {hector.arg = {role = "graph", name = "csr_src", shape = ["E"]}},
    %h: memref<?x8xf32> {hector.arg = {role = "input", name = "h", shape = ["N", 8]}},
    %scale: memref<8xf32> {hector.arg = {role = "weight", name = "scale", shape = [8]}},
    %out: memref<?x8xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 8]}}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %h, %c0 : memref<?x8xf32>
  scf.parallel (%t, %f) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    %t1 = arith.addi %t, %c1 : index
    %b = memref.load %row_ptr[%t] : memref<?xi32>
    %e = memref.load %row_ptr[%t1] : memref<?xi32>
    %bi = arith.index_cast %b : i32 to index
    %ei = arith.index_cast %e : i32 to index
    %sum = scf.for %k = %bi to %ei step %c1 iter_args(%acc = %zero) -> (f32) {
      %s = memref.load %col[%k] : memref<?xi32>
      %si = arith.index_cast %s : i32 to index
      %v = memref.load %h[%si, %f] : memref<?x8xf32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %w = memref.load %scale[%f] : memref<8xf32>
    %r = arith.mulf %sum, %w : f32
    memref.store %r, %out[%t, %f] : memref<?x8xf32>
  }
  return
}

func.func @double(%x: memref<?xf64>, %y: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<?xf64>
    %w = arith.addf %v, %v : f64
    memref.store %w, %y[%i] : memref<?xf64>
  }
  return
}
