//===- Backend.h - from the LLVM dialect to a shared library ----*- C++ -*-===//
//
// The last steps of --emit=lib: LLVM IR, optimisation, an object file for the
// host (position independent, in-process), and a link by the system compiler
// driver into a shared library that needs no LLVM or MLIR at run time.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_BACKEND_H
#define HECTOR_TARGET_BACKEND_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace hector {

/// Which CPU host code is compiled for.
struct HostCodeOptions {
  int optLevel = 2;
  /// The CPU library's code: "portable" compiles every function for the
  /// baseline of the host architecture and, on x86-64, also for x86-64-v3
  /// and x86-64-v4, with entry points that pick the best one the running
  /// CPU supports; "native" compiles for the CPU hectorc runs on; any other
  /// value is an LLVM CPU name (e.g. x86-64-v3). Empty: generic host code
  /// without the CPU runtime (CUDA libraries).
  std::string cpu;
};

/// Checks `cpu` (HostCodeOptions::cpu) against the host architecture; on
/// failure `why` says what is accepted.
mlir::LogicalResult checkHostCPU(llvm::StringRef cpu, std::string &why);

/// Translates an LLVM-dialect module (host code; GPU binaries embedded) to
/// LLVM IR for the host and optimises it at `options.optLevel` (0-3). For a
/// CPU library (`options.cpu` set) the functions are compiled for the CPUs
/// it names, and the CPU runtime (thread pool, CPU detection) the code uses
/// is linked in. Errors are emitted as diagnostics.
std::unique_ptr<llvm::Module>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                  const HostCodeOptions &options);

/// Writes `module` as a position-independent host object file.
mlir::LogicalResult emitObjectFile(llvm::Module &module, llvm::StringRef path,
                                   int optLevel, std::string &error);

struct LinkOptions {
  /// The compiler driver that links ("cc", "clang-22", a path).
  std::string driver = "cc";
  std::string object;
  std::string output;
  /// For CUDA: libhector_runtime.so to link against (found beside the
  /// library at run time through rpath $ORIGIN). Empty for CPU.
  std::string runtimeLibrary;
};

/// Links one object into a shared library. On failure `error` holds the
/// driver's command line and output.
mlir::LogicalResult linkSharedLibrary(const LinkOptions &options,
                                      std::string &error);

/// Writes the PTX of every gpu.binary object in `module` (lowered with
/// cubin-format=isa) to `os`. Fails, with a diagnostic, when there is none.
mlir::LogicalResult writePTX(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace hector

#endif // HECTOR_TARGET_BACKEND_H
