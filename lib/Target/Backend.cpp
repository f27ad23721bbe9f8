//===- Backend.cpp - from the LLVM dialect to a shared library --*- C++ -*-===//

#include "hector/Target/Backend.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <optional>

using namespace mlir;

namespace {

llvm::CodeGenOptLevel codeGenLevel(int optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 3:
    return llvm::CodeGenOptLevel::Aggressive;
  default:
    return llvm::CodeGenOptLevel::Default;
  }
}

/// A target machine for the host's triple. The CPU is the generic one of
/// the architecture: libraries are built here and run on other machines.
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(int optLevel,
                                                       std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", options, llvm::Reloc::PIC_, std::nullopt,
      codeGenLevel(optLevel)));
  if (!machine)
    error = "no target machine for " + triple.str();
  return machine;
}

} // namespace

std::unique_ptr<llvm::Module>
hector::translateToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                          int optLevel) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "hector_model");
  if (!llvmModule) {
    module.emitError("translation to LLVM IR failed");
    return nullptr;
  }
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      hostTargetMachine(optLevel, error);
  if (!machine) {
    module.emitError("no host code generator: ") << error;
    return nullptr;
  }
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  if (optLevel <= 0)
    return llvmModule;

  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(machine.get());
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(level);
  passes.run(*llvmModule, modules);
  return llvmModule;
}

LogicalResult hector::emitObjectFile(llvm::Module &module, StringRef path,
                                     int optLevel, std::string &error) {
  std::unique_ptr<llvm::TargetMachine> machine =
      hostTargetMachine(optLevel, error);
  if (!machine)
    return failure();
  module.setDataLayout(machine->createDataLayout());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + path.str() + ": " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    error = "the host code generator cannot emit object files";
    return failure();
  }
  passes.run(module);
  os.flush();
  if (os.has_error()) {
    error = "cannot write " + path.str() + ": " + os.error().message();
    os.clear_error();
    return failure();
  }
  return success();
}

LogicalResult hector::linkSharedLibrary(const LinkOptions &options,
                                        std::string &error) {
  llvm::ErrorOr<std::string> driver =
      llvm::sys::path::has_parent_path(options.driver)
          ? llvm::ErrorOr<std::string>(options.driver)
          : llvm::sys::findProgramByName(options.driver);
  if (!driver) {
    error = "the linker driver '" + options.driver +
            "' was not found on PATH (choose one with --cc=)";
    return failure();
  }
  std::vector<std::string> args = {*driver, "-shared", "-o", options.output,
                                   options.object};
  if (!options.runtimeLibrary.empty()) {
    // Recorded as DT_NEEDED libhector_runtime.so (its soname) and looked up
    // beside the library first.
    args.push_back(options.runtimeLibrary);
    args.push_back("-Wl,-rpath,$ORIGIN");
  }
  // Every symbol must resolve now, against libc/libm (and the runtime), so
  // that a missing one is a build error rather than a failed dlopen.
  for (const char *arg : {"-Wl,--no-undefined", "-Wl,--as-needed", "-lm",
                          "-Wl,-z,noexecstack"})
    args.push_back(arg);

  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("hectorc-link", "log", log)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  llvm::FileRemover removeLog(log);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*driver, argRefs, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &execError);
  if (rc == 0)
    return success();
  std::string command;
  for (const std::string &arg : args)
    command += (command.empty() ? "" : " ") + arg;
  error = "linking failed (" + command + ")";
  if (!execError.empty())
    error += ": " + execError;
  if (auto text = llvm::MemoryBuffer::getFile(log); text && (*text)->getBufferSize())
    error += ":\n" + (*text)->getBuffer().str();
  return failure();
}

LogicalResult hector::writePTX(ModuleOp module, llvm::raw_ostream &os) {
  bool any = false;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    for (Attribute attr : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(attr);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      os << "// gpu.module @" << binary.getSymName() << "\n"
         << object.getObject().getValue() << "\n";
      any = true;
    }
  }
  if (!any)
    return module.emitError("no PTX was produced: the module has no GPU "
                            "kernel (no parallel loop to map)");
  return success();
}
