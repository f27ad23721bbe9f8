//===- Backend.cpp - from the LLVM dialect to a shared library --*- C++ -*-===//

#include "hector/Target/Backend.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
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
#include "llvm/Transforms/Utils/Cloning.h"

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
  // The CPU runtime uses inline assembly (cpuid, xgetbv).
  llvm::InitializeNativeTargetAsmParser();
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

namespace {

/// The CPU runtime of CPU libraries (CPURuntime.c), as LLVM bitcode.
const unsigned char kCPURuntimeBitcode[] = {
#include "CPURuntime.bc.inc"
};

/// One compilation of the code: for which CPU, and from which
/// hector_cpu_level() on the dispatching entry points choose it.
struct CPUVariant {
  std::string suffix; // of the functions' names
  std::string cpu, features;
  int level;
};

std::vector<CPUVariant> cpuVariants(StringRef cpu, const llvm::Triple &triple) {
  if (cpu == "portable") {
    if (triple.getArch() != llvm::Triple::x86_64)
      return {{"generic", "generic", "", 0}};
    return {{"x86-64", "x86-64", "", 0},
            {"x86-64-v3", "x86-64-v3", "", 3},
            {"x86-64-v4", "x86-64-v4", "", 4}};
  }
  if (cpu == "native") {
    std::string features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") +
                  std::string(feature.getValue() ? "+" : "-") +
                  feature.getKey().str();
    return {{"native", llvm::sys::getHostCPUName().str(), features, 0}};
  }
  return {{cpu.str(), cpu.str(), "", 0}};
}

void setCPU(llvm::Function &function, const CPUVariant &variant) {
  if (function.isDeclaration())
    return;
  function.addFnAttr("target-cpu", variant.cpu);
  if (!variant.features.empty())
    function.addFnAttr("target-features", variant.features);
}

/// Compiles every function once per variant and turns each exported
/// function into a dispatcher that calls the copy for the best variant the
/// running CPU supports (hector_cpu_level()).
LogicalResult multiversion(llvm::Module &module,
                           ArrayRef<CPUVariant> variants, std::string &error) {
  SmallVector<llvm::Function *> exported;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !function.hasLocalLinkage())
      exported.push_back(&function);

  // Copies of the module as it is, before any of them is linked into it.
  SmallVector<std::unique_ptr<llvm::Module>> copies;
  for (size_t k = 1; k < variants.size(); ++k)
    copies.push_back(llvm::CloneModule(module));
  for (auto [variant, copy] :
       llvm::zip(variants.drop_front(), copies)) {
    for (llvm::Function &function : *copy) {
      setCPU(function, variant);
      // Renamed; internal once the dispatchers call them (the linker drops
      // local functions nobody calls yet).
      if (!function.isDeclaration() && !function.hasLocalLinkage())
        function.setName(function.getName() + "." + variant.suffix);
    }
    // Data defined for all to see stays the original's; module-level arrays
    // (constructors) are not repeated.
    SmallVector<llvm::GlobalVariable *> appending;
    for (llvm::GlobalVariable &global : copy->globals()) {
      if (global.hasAppendingLinkage())
        appending.push_back(&global);
      else if (!global.isDeclaration() && !global.hasLocalLinkage()) {
        global.setInitializer(nullptr);
        global.setLinkage(llvm::GlobalValue::ExternalLinkage);
        global.setComdat(nullptr);
      }
    }
    for (llvm::GlobalVariable *global : appending)
      global->eraseFromParent();
    if (llvm::Linker::linkModules(module, std::move(copy))) {
      error = "cannot link the " + variant.cpu + " version of the code";
      return failure();
    }
  }

  const CPUVariant &base = variants.front();
  for (llvm::Function &function : module)
    if (!function.getFnAttribute("target-cpu").isValid())
      setCPU(function, base);
  llvm::LLVMContext &context = module.getContext();
  llvm::FunctionCallee level = module.getOrInsertFunction(
      "hector_cpu_level", llvm::FunctionType::get(
                              llvm::Type::getInt32Ty(context), false));
  SmallVector<std::string> names;
  for (llvm::Function *function : exported) {
    std::string name = function->getName().str();
    names.push_back(name);
    function->setName(name + "." + base.suffix);
    function->setLinkage(llvm::GlobalValue::InternalLinkage);
    llvm::Function *dispatcher =
        llvm::Function::Create(function->getFunctionType(),
                               llvm::GlobalValue::ExternalLinkage, name, module);
    SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : dispatcher->args())
      args.push_back(&arg);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", dispatcher));
    llvm::Value *detected = b.CreateCall(level);
    // Best variant first; the baseline takes what is left.
    for (const CPUVariant &variant : llvm::reverse(variants)) {
      llvm::Function *target = module.getFunction(name + "." + variant.suffix);
      if (!target) {
        error = "internal error: no " + variant.cpu + " version of " + name;
        return failure();
      }
      llvm::BasicBlock *next = nullptr;
      if (variant.level > 0) {
        llvm::BasicBlock *here =
            llvm::BasicBlock::Create(context, variant.suffix, dispatcher);
        next = llvm::BasicBlock::Create(context, "", dispatcher);
        b.CreateCondBr(b.CreateICmpSGE(detected, b.getInt32(variant.level)),
                       here, next);
        b.SetInsertPoint(here);
      }
      llvm::CallInst *call = b.CreateCall(target, args);
      call->setTailCall();
      if (dispatcher->getReturnType()->isVoidTy())
        b.CreateRetVoid();
      else
        b.CreateRet(call);
      if (!next)
        break;
      b.SetInsertPoint(next);
    }
  }
  for (const std::string &name : names)
    for (const CPUVariant &variant : variants)
      module.getFunction(name + "." + variant.suffix)
          ->setLinkage(llvm::GlobalValue::InternalLinkage);
  return success();
}

/// Links the CPU runtime's functions that `module` calls into it, and the
/// ones every CPU library exports (runtime/include/hector/temporaries.h: the
/// temporaries' counters and cap, and the calling thread's status), which
/// callers look up in every CPU library whether its code allocates or not.
LogicalResult linkCPURuntime(llvm::Module &module, std::string &error) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Type *none = llvm::Type::getVoidTy(context);
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  // Declared here, so that LinkOnlyNeeded brings them in.
  const std::pair<StringRef, llvm::FunctionType *> exported[] = {
      {"hector_cpu_status", llvm::FunctionType::get(i32, false)},
      {"hector_cpu_error", llvm::FunctionType::get(ptr, false)},
      {"hector_cpu_clear", llvm::FunctionType::get(none, false)},
      {"hector_cpu_set_temporary_cap", llvm::FunctionType::get(i32, {i64}, false)},
      {"hector_cpu_temporary_cap", llvm::FunctionType::get(i64, false)},
      {"hector_cpu_temporary_bytes", llvm::FunctionType::get(i64, false)},
      {"hector_cpu_peak_temporary_bytes", llvm::FunctionType::get(i64, false)},
      {"hector_cpu_reset_peak_temporary_bytes",
       llvm::FunctionType::get(none, false)},
  };
  for (const auto &[name, type] : exported) {
    llvm::Function *existing = module.getFunction(name);
    if (existing && existing->getFunctionType() != type) {
      error = "the CPU runtime's '" + name.str() +
              "' is already declared with another type";
      return failure();
    }
    module.getOrInsertFunction(name, type);
  }
  llvm::MemoryBufferRef buffer(
      StringRef(reinterpret_cast<const char *>(kCPURuntimeBitcode),
                sizeof(kCPURuntimeBitcode)),
      "CPURuntime.bc");
  llvm::Expected<std::unique_ptr<llvm::Module>> runtime =
      llvm::parseBitcodeFile(buffer, module.getContext());
  if (!runtime) {
    error = "cannot read the embedded CPU runtime: " +
            llvm::toString(runtime.takeError());
    return failure();
  }
  (*runtime)->setTargetTriple(module.getTargetTriple());
  (*runtime)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*runtime),
                                llvm::Linker::LinkOnlyNeeded)) {
    error = "cannot link the CPU runtime";
    return failure();
  }
  return success();
}

} // namespace

LogicalResult hector::checkHostCPU(StringRef cpu, std::string &why) {
  if (cpu == "portable" || cpu == "native")
    return success();
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    why = error;
    return failure();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (info && info->isCPUStringValid(cpu))
    return success();
  why = "unknown --cpu=" + cpu.str() + " for " + triple.str() +
        " (portable, native, or an LLVM CPU name such as x86-64-v3)";
  return failure();
}

std::unique_ptr<llvm::Module>
hector::translateToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                          const HostCodeOptions &options) {
  int optLevel = options.optLevel;
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
  if (!options.cpu.empty()) {
    std::vector<CPUVariant> variants =
        cpuVariants(options.cpu, machine->getTargetTriple());
    if (variants.size() > 1) {
      if (failed(multiversion(*llvmModule, variants, error))) {
        module.emitError(error);
        return nullptr;
      }
    } else {
      for (llvm::Function &function : *llvmModule)
        setCPU(function, variants.front());
    }
    if (failed(linkCPURuntime(*llvmModule, error))) {
      module.emitError(error);
      return nullptr;
    }
  }
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
  // -pthread: the CPU runtime's thread pool (part of libc since glibc 2.34).
  for (const char *arg : {"-pthread", "-Wl,--no-undefined", "-Wl,--as-needed",
                          "-lm", "-Wl,-z,noexecstack"})
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
