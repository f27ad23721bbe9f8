//===- hectorc-fuzzer.cpp - libFuzzer target over hectorc's pipeline ------===//
//
// Feeds every input, as the text of an hgraph module, through what hectorc
// does with a model, in-process: parse, verify, the hgraph passes
// (autodiff, linear reordering, compact materialization), hgraph-to-htmpl,
// the CPU or CUDA loop lowering, the entry-point checks and the manifest,
// and, for the CPU target, the LLVM dialect and the translation to LLVM IR
// (everything short of machine code and the external linker).
//
// Which hectorc options an input runs with (target, --training, --save,
// --variant, --split-softmax, --typed-endpoints, --graph-sizes,
// --host-resident) is decided by a hash of its bytes (so a reproducer
// reproduces); HECTOR_FUZZ_VERBOSE=1 prints them, and
// `hectorc` with those options reproduces a crash outside the fuzzer.
//
// A crash (a signal, an AddressSanitizer report) or an input that runs past
// libFuzzer's -timeout is a bug. An input that hectorc rejects with a
// diagnostic is not: diagnostics are swallowed. docs/robustness.md says how
// to build and run it.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Backend.h"
#include "hector/Target/EntryPoints.h"
#include "hector/Target/Pipelines.h"

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdint>
#include <cstdlib>

namespace {

/// Inputs larger than this are skipped: the fuzzer looks for crashes and
/// hangs per byte of input, not for the cost of huge models.
constexpr size_t kMaxInputBytes = 16 * 1024;

/// One hectorc configuration.
struct Config {
  hector::Target target = hector::Target::CPU;
  hector::PipelineOptions pipeline;
  /// The last stage run (CPU: up to LLVM IR; CUDA: up to the GPU stage,
  /// since the cubin needs ptxas).
  hector::Stage last = hector::Stage::LLVM;
  bool translate = false;
  std::string flags;
};

/// The configuration of an input: bits of a hash of its bytes pick the
/// target (and --host-resident), --training and --save, --variant,
/// --split-softmax, --typed-endpoints and --graph-sizes.
void configure(Config &config, llvm::StringRef text) {
  uint64_t bits = llvm::xxh3_64bits(text);
  auto take = [&](unsigned count) {
    uint64_t value = bits % count;
    bits /= count;
    return value;
  };
  hector::PipelineOptions &options = config.pipeline;
  // One input in four goes the CUDA way (htmpl-to-gpu and the GPU mapping).
  if (take(4) == 0) {
    config.target = hector::Target::CUDA;
    options.gpuTemplates = take(4) != 0;
    config.last = hector::Stage::GPU;
    config.flags += " --target=cuda --emit=gpu";
    if (!options.gpuTemplates)
      config.flags += " --gpu-templates=false";
    if (take(2) == 0) { // the examples' node features are named h
      options.hostResident = std::vector<std::string>{"h"};
      config.flags += " --host-resident=h";
    }
  } else {
    options.optLevel = 0;
    config.translate = true;
    config.flags += " --target=cpu --emit=llvmir --opt-level=0";
  }
  if (take(2) == 0) {
    options.training = true;
    static const char *const kSave[] = {"materialized", "all", "none"};
    options.savePolicy = kSave[take(3)];
    config.flags += " --training --save=" + options.savePolicy.getValue();
  }
  static const char *const kVariant[] = {"both", "unopt", "compact", "reorder"};
  unsigned variant = take(4);
  options.linearReordering = variant == 0 || variant == 3;
  options.compactMaterialization = variant == 0 || variant == 2;
  config.flags += std::string(" --variant=") + kVariant[variant];
  if (take(4) == 0) {
    options.splitSoftmax = true;
    config.flags += " --split-softmax";
  }
  if (take(4) == 0) {
    options.typedEndpoints = true;
    config.flags += " --typed-endpoints";
  }
  // Graph sizes that make compaction and reordering pay, or not.
  switch (take(4)) {
  case 0:
    options.numNodes = 100;
    options.numEdges = 1000000;
    options.numPairs = 100;
    config.flags += " --graph-sizes=N=100,E=1000000,P=100";
    break;
  case 1:
    options.numNodes = 100000;
    options.numEdges = 100001;
    options.numPairs = 100001;
    config.flags += " --graph-sizes=N=100000,E=100001,P=100001";
    break;
  default:
    break;
  }
}

/// Dialects a model may be written in: the parser sees only these, so that
/// the fuzzer exercises Hector's parsers and verifiers rather than every
/// upstream dialect's. The lowering gets the rest before it runs.
mlir::DialectRegistry &modelDialects() {
  static mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry r;
    r.insert<hector::hgraph::HGraphDialect>();
    return r;
  }();
  return registry;
}

mlir::DialectRegistry &allDialects() {
  static mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry r;
    hector::registerTargetDialects(r);
    return r;
  }();
  return registry;
}

bool verbose() {
  static bool on = [] {
    const char *value = std::getenv("HECTOR_FUZZ_VERBOSE");
    return value && *value && std::string(value) != "0";
  }();
  return on;
}

/// True when `module` holds hgraph functions and nothing else (the input
/// hectorc's model path takes; a module of upstream ops is not a model).
bool isModel(mlir::ModuleOp module) {
  bool onlyHGraph = true;
  module.getBody()->walk([&](mlir::Operation *op) {
    if (!llvm::isa<hector::hgraph::HGraphDialect>(op->getDialect()))
      onlyHGraph = false;
  });
  return onlyHGraph && !module.getBody()->empty();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  hector::registerTargetPasses();
  (void)modelDialects();
  (void)allDialects();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1; // not added to the corpus
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  Config config;
  configure(config, text);
  if (verbose())
    llvm::errs() << "hectorc-fuzzer: hectorc" << config.flags << " (" << size << " bytes)\n";

  mlir::MLIRContext context(modelDialects(),
                            mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz-input.mlir"),
      llvm::SMLoc());
  // Diagnostics are expected (most inputs are invalid): swallowed, unless
  // HECTOR_FUZZ_VERBOSE asks for them.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &diag) {
    if (verbose())
      llvm::errs() << "hectorc-fuzzer: " << diag << "\n";
    return mlir::success();
  });

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module || mlir::failed(mlir::verify(*module)) || !isModel(*module))
    return 0;

  context.appendDialectRegistry(allDialects());
  for (hector::Stage stage :
       {hector::Stage::HGraph, hector::Stage::HTmpl, hector::Stage::Loops,
        hector::Stage::GPU, hector::Stage::LLVM}) {
    if (static_cast<int>(stage) > static_cast<int>(config.last))
      break;
    if (stage == hector::Stage::GPU) {
      mlir::FailureOr<std::vector<hector::EntryPoint>> entries =
          hector::prepareEntryPoints(*module);
      if (mlir::failed(entries))
        return 0;
      hector::ManifestInfo info;
      info.target = hector::targetName(config.target).str();
      std::string manifest = hector::renderManifest(*entries, info);
      if (manifest.empty())
        __builtin_trap(); // a manifest is never empty
    }
    if (mlir::failed(
            hector::runStage(*module, config.target, stage, config.pipeline)))
      return 0;
  }
  if (config.translate) {
    llvm::LLVMContext llvmContext;
    hector::HostCodeOptions host;
    host.optLevel = 0;
    host.cpu = "portable";
    std::unique_ptr<llvm::Module> llvmModule =
        hector::translateToLLVMIR(*module, llvmContext, host);
    (void)llvmModule;
  }
  return 0;
}
