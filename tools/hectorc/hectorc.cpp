//===- hectorc.cpp - the Hector compiler driver -----------------*- C++ -*-===//
//
// Reads a model in the inter-operator IR (hgraph), or a module already
// lowered further (func.func over memrefs), lowers it for --target and writes
// the stage named by --emit: an IR stage, PTX, LLVM IR, or a shared library
// with its JSON manifest (docs/backends.md). Diagnostics go to stderr as
// `file:line:col: error: ...` and the exit status is non-zero on any error.
//
//===----------------------------------------------------------------------===//

#include "hector/Target/Backend.h"
#include "hector/Target/EntryPoints.h"
#include "hector/Target/Pipelines.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <optional>

namespace cl = llvm::cl;
using hector::Stage;
using hector::Target;

namespace {

constexpr const char *kVersion = "0.1.0";
constexpr const char *kRuntimeName = "libhector_runtime.so";

/// The stages hectorc can write.
enum class EmitStage {
  /// Verified inter-operator IR, after the hgraph-level optimisations.
  HGraph,
  HTmpl,
  Loops,
  GPU,
  LLVM,
  LLVMIR,
  PTX,
  Lib,
};

cl::OptionCategory hectorCategory("hectorc options");

cl::opt<std::string> inputFilename(cl::Positional,
                                   cl::desc("<model.mlir | - for stdin>"),
                                   cl::init("-"), cl::cat(hectorCategory));

cl::opt<std::string>
    outputFilename("o",
                   cl::desc("Output file (default: stdout; --emit=lib needs "
                            "a file, and also writes <file>.json)"),
                   cl::value_desc("file"), cl::init("-"),
                   cl::cat(hectorCategory));

cl::opt<EmitStage> emitStage(
    "emit",
    cl::desc("Stage to write (default: lib when --target is given or -o ends "
             "in .so, else hgraph):"),
    cl::init(EmitStage::HGraph),
    cl::values(
        clEnumValN(EmitStage::HGraph, "hgraph",
                   "inter-operator IR after the hgraph-level "
                   "optimisations (--variant; the default)"),
        clEnumValN(EmitStage::HTmpl, "htmpl",
                   "after hgraph-to-htmpl: func.func over memrefs with "
                   "htmpl.gemm / htmpl.traversal"),
        clEnumValN(EmitStage::Loops, "loops",
                   "after htmpl-to-loops: scf.parallel loop nests"),
        clEnumValN(EmitStage::GPU, "gpu",
                   "cuda: kernels outlined into gpu.module, host code "
                   "launching them"),
        clEnumValN(EmitStage::LLVM, "llvm",
                   "the LLVM dialect (cuda: with the GPU binary embedded)"),
        clEnumValN(EmitStage::LLVMIR, "llvmir",
                   "optimised LLVM IR of the host code"),
        clEnumValN(EmitStage::PTX, "ptx", "cuda: the kernels' PTX"),
        clEnumValN(EmitStage::Lib, "lib",
                   "a shared library (-o lib<model>.so) and its manifest "
                   "<lib>.json")),
    cl::cat(hectorCategory));

cl::opt<Target> target(
    "target", cl::desc("Where the generated code runs (default: cpu):"),
    cl::init(Target::CPU),
    cl::values(clEnumValN(Target::CPU, "cpu",
                          "host code; parallel loops run on a thread pool"),
               clEnumValN(Target::CUDA, "cuda",
                          "NVIDIA GPUs: kernels in a cubin, launched through "
                          "libhector_runtime.so")),
    cl::cat(hectorCategory));

cl::opt<std::string> gpuArch("gpu-arch",
                             cl::desc("cuda: GPU architecture of the cubin"),
                             cl::value_desc("sm_XY"), cl::init("sm_90"),
                             cl::cat(hectorCategory));

cl::opt<std::string>
    gpuFeatures("gpu-features",
                cl::desc("cuda: PTX features (sm_90 needs +ptx80 or newer)"),
                cl::value_desc("features"), cl::init("+ptx80"),
                cl::cat(hectorCategory));

cl::opt<int64_t> gpuBlockSize("gpu-block-size",
                              cl::desc("cuda: threads per block (1-1024)"),
                              cl::init(hector::kDefaultGPUBlockSize),
                              cl::cat(hectorCategory));

cl::opt<bool> gpuTemplates(
    "gpu-templates",
    cl::desc("cuda: lower GEMM and traversal instances with htmpl-to-gpu "
             "(tiled, warp-reduced kernels; the default). "
             "--gpu-templates=false uses htmpl-to-loops (simpler, slower)"),
    cl::init(true), cl::cat(hectorCategory));

cl::opt<int64_t> traversalLanes(
    "traversal-lanes",
    cl::desc("cuda: lanes per edge or node of the traversal kernels (1, 2, "
             "4, 8, 16 or 32); 0, the default, sizes each traversal's lane "
             "groups to its feature loops"),
    cl::init(0), cl::cat(hectorCategory));

cl::opt<std::string> gemmStaging(
    "gemm-staging",
    cl::desc("cuda: how the fp32 vector GEMM kernel stages its tiles: async "
             "(cp.async into two shared buffers, the default) or registers"),
    cl::init(hector::HTmplToGPUOptions().gemmStaging),
    cl::cat(hectorCategory));

cl::opt<int64_t> gemmBlocksPerSM(
    "gemm-blocks-per-sm",
    cl::desc("cuda: blocks per SM the asynchronously staged GEMM kernels are "
             "register-limited for (nvvm.minctasm; default 4; 0 lets ptxas "
             "choose)"),
    cl::init(hector::HTmplToGPUOptions().gemmBlocksPerSM),
    cl::cat(hectorCategory));

cl::opt<hector::Precision> precision(
    "precision",
    cl::desc("cuda: arithmetic of the GEMM products (default: fp32):"),
    cl::init(hector::Precision::FP32),
    cl::values(clEnumValN(hector::Precision::FP32, "fp32",
                          "fp32 FMAs (exact to fp32 rounding)"),
               clEnumValN(hector::Precision::TF32, "tf32",
                          "TF32 tensor cores (mma.sync; inputs rounded to "
                          "10 mantissa bits, fp32 sums) in the row-mode "
                          "GEMMs of 16-byte rows, fp32 FMAs elsewhere")),
    cl::cat(hectorCategory));

cl::opt<bool> training(
    "training",
    cl::desc("Also build training entry points: <f>_fwd (results plus the "
             "values the backward reads) and <f>_bwd (gradients of every "
             "argument), derived by hgraph-autodiff"),
    cl::init(false), cl::cat(hectorCategory));

cl::opt<std::string> savePolicy(
    "save",
    cl::desc("With --training: which forward values the backward reads "
             "from memory rather than recomputes: materialized (default; "
             "GEMM, reduction and softmax results), all, none"),
    cl::init("materialized"), cl::cat(hectorCategory));

cl::opt<std::string> offloadMode(
    "offload",
    cl::desc("With --training: where each saved value waits for the backward "
             "(hgraph-offload-scheduling): none (default), host, disk, auto. "
             "Moved values reach the runtime's tensor cache (docs/offload.md); "
             "CPU libraries then link libhector_runtime.so too"),
    cl::init("none"), cl::cat(hectorCategory));

cl::opt<std::string> offloadRates(
    "offload-rates",
    cl::desc("With --offload=auto: the planner's rates, measured on the "
             "machine the library is for: device-gbps=,gemm-tflops=,"
             "host-write-gbps=,host-read-gbps=,disk-write-gbps=,"
             "disk-read-gbps=, positive numbers (any subset, each at most "
             "once; the rest: the H100 figures of docs/offload.md). They set "
             "the pipeline's offload-device-gbps, offload-gemm-tflops, ..."),
    cl::value_desc("key=value,..."), cl::init(""), cl::cat(hectorCategory));

cl::opt<int64_t> offloadCapacityMiB(
    "offload-capacity-mib",
    cl::desc("With --offload=auto: device memory the training step's values "
             "may use, MiB (0: no limit)"),
    cl::init(0), cl::cat(hectorCategory));

/// Which hgraph-level optimisations run (docs/optimizations.md).
enum class Variant { Unopt, Compact, Reorder, Both };

cl::opt<Variant> variant(
    "variant",
    cl::desc("hgraph-level optimisations (docs/optimizations.md; default: "
             "both):"),
    cl::init(Variant::Both),
    cl::values(
        clEnumValN(Variant::Unopt, "unopt", "none"),
        clEnumValN(Variant::Compact, "compact",
                   "compact materialization: values that depend only on "
                   "(source, edge type) stored once per unique pair"),
        clEnumValN(Variant::Reorder, "reorder",
                   "linear operator reordering: weight-only products first "
                   "where that saves multiply-adds"),
        clEnumValN(Variant::Both, "both", "reorder, then compact")),
    cl::cat(hectorCategory));

cl::opt<bool> splitSoftmax(
    "split-softmax",
    cl::desc("Lower edge_softmax as two edge traversals that accumulate "
             "the per-destination maximum and then the sum of exponentials "
             "with atomics, instead of the default: one reduction per "
             "destination over its incoming edges (for comparison)"),
    cl::init(false), cl::cat(hectorCategory));

cl::opt<bool> fuseSoftmaxAggregate(
    "fuse-softmax-aggregate",
    cl::desc("Lower an edge_softmax whose only use is a weighted sum into the "
             "destinations (RGAT's and HGT's inference) with that sum, in one "
             "pass over each CSR row with an online softmax (off by default: "
             "slower where rows are long, docs/performance.md)"),
    cl::init(false), cl::cat(hectorCategory));

cl::opt<std::string> graphSizes(
    "graph-sizes",
    cl::desc("Sizes of the graph the library is for, which the optimisations' "
             "profitability decisions use (default: the ratios of "
             "docs/optimizations.md): N=<nodes>,E=<edges>,P=<unique (source, "
             "edge type) pairs>,R=<edge types>,T=<node types>, any subset"),
    cl::value_desc("N=..,E=..,P=..,R=..,T=.."), cl::init(""),
    cl::cat(hectorCategory));

cl::opt<bool> typedEndpoints(
    "typed-endpoints",
    cl::desc("The graphs the library is for have edge types with fixed source "
             "and destination node types (canonical (source type, relation, "
             "destination type) edge types): lets reordering multiply "
             "node-typed and edge-typed weights (HGT). Results on other graphs "
             "are wrong"),
    cl::init(false), cl::cat(hectorCategory));

cl::list<std::string> hostResident(
    "host-resident",
    cl::desc("cuda: node-wise inputs (argument names) that stay in pinned, "
             "mapped host memory; kernels read their rows in place over "
             "PCIe, with no device copy (pass hector.unified tensors)"),
    cl::value_desc("name[,name...]"), cl::CommaSeparated,
    cl::cat(hectorCategory));

cl::opt<int> optLevel("opt-level",
                      cl::desc("Optimisation level of host and device code "
                               "(0-3, default 2)"),
                      cl::init(2), cl::cat(hectorCategory));

cl::opt<std::string> hostCPU(
    "cpu",
    cl::desc("cpu: the CPU the library's code is compiled for: portable (the "
             "default: baseline x86-64, x86-64-v3 and x86-64-v4 versions, "
             "picked at run time), native (this machine's CPU; the library "
             "may not run elsewhere) or an LLVM CPU name (e.g. x86-64-v3)"),
    cl::value_desc("portable|native|name"), cl::init("portable"),
    cl::cat(hectorCategory));

cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("cuda: CUDA toolkit with bin/ptxas and nvvm/libdevice (default: "
             "$CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, else /usr/local/cuda)"),
    cl::value_desc("dir"), cl::init(""), cl::cat(hectorCategory));

cl::opt<std::string> runtimeLib(
    "runtime-lib",
    cl::desc("cuda: libhector_runtime.so to link against; it is copied next "
             "to the library, which finds it there (rpath $ORIGIN) "
             "(default: $HECTOR_RUNTIME_LIB, else the build tree's)"),
    cl::value_desc("path"), cl::init(""), cl::cat(hectorCategory));

cl::opt<std::string> linkerDriver(
    "cc", cl::desc("Compiler driver that links the shared library"),
    cl::value_desc("program"), cl::init("cc"), cl::cat(hectorCategory));

cl::opt<bool> emitGeneric("mlir-print-generic",
                          cl::desc("Print IR in the generic operation form"),
                          cl::init(false), cl::cat(hectorCategory));

int fail(const llvm::Twine &message) {
  llvm::errs() << "hectorc: error: " << message << "\n";
  return 1;
}

/// One `key=value` item of a list option (--graph-sizes, --offload-rates):
/// the key's index in the option's keys, and the value's text.
struct ListItem {
  size_t key;
  llvm::StringRef value;
};

/// Splits `text`, the value of --`flag` (`key=value,...`, keys among `keys`,
/// any subset), into its items, or fails with `why` set: an unknown key (a
/// `noun`; `expected` says what the option takes) or a key given twice.
mlir::FailureOr<llvm::SmallVector<ListItem>>
splitKeyValueList(llvm::StringRef flag, llvm::StringRef text,
                  llvm::ArrayRef<llvm::StringRef> keys, llvm::StringRef noun,
                  llvm::StringRef expected, std::string &why) {
  llvm::SmallVector<llvm::StringRef> texts;
  text.split(texts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  llvm::SmallVector<ListItem> items;
  llvm::SmallVector<bool> given(keys.size(), false);
  for (llvm::StringRef item : texts) {
    auto [key, value] = item.trim().split('=');
    const auto *known = llvm::find(keys, key);
    if (known == keys.end()) {
      why = ("--" + flag + ": unknown " + noun + " '" + key + "' in '" +
             item.trim() + "'; expected " + expected)
                .str();
      return mlir::failure();
    }
    size_t index = known - keys.begin();
    if (given[index]) {
      why = ("--" + flag + ": " + key + " is given twice").str();
      return mlir::failure();
    }
    given[index] = true;
    items.push_back({index, value});
  }
  return items;
}

/// Sets the graph sizes of `options` from --graph-sizes=N=..,E=.., or fails
/// with `why` set.
mlir::LogicalResult setGraphSizes(llvm::StringRef text,
                                  hector::PipelineOptions &options,
                                  std::string &why) {
  const llvm::StringRef symbols[] = {"N", "E", "P", "R", "T"};
  hector::PipelineOptions::Option<int64_t> *sizes[] = {
      &options.numNodes, &options.numEdges, &options.numPairs,
      &options.numEdgeTypes, &options.numNodeTypes};
  auto items = splitKeyValueList(
      "graph-sizes", text, symbols, "symbol",
      "N=<count>,E=<count>,P=<count>,R=<count>,T=<count> (any subset, "
      "positive counts)",
      why);
  if (mlir::failed(items))
    return mlir::failure();
  for (auto [key, value] : *items) {
    uint64_t size;
    if (value.getAsInteger(10, size) || size == 0 ||
        size > (uint64_t(1) << 62)) {
      why = ("--graph-sizes: " + symbols[key] +
             " must be a positive count, got '" + value + "'")
                .str();
      return mlir::failure();
    }
    *sizes[key] = static_cast<int64_t>(size);
  }
  return mlir::success();
}

/// Sets the planner's rates in `options` from --offload-rates=
/// device-gbps=..,gemm-tflops=.., or fails with `why` set.
mlir::LogicalResult setOffloadRates(llvm::StringRef text,
                                    hector::PipelineOptions &options,
                                    std::string &why) {
  const llvm::StringRef names[] = {"device-gbps",     "gemm-tflops",
                                   "host-write-gbps", "host-read-gbps",
                                   "disk-write-gbps", "disk-read-gbps"};
  hector::PipelineOptions::Option<double> *rates[] = {
      &options.offloadDeviceGBps,     &options.offloadGemmTFlops,
      &options.offloadHostWriteGBps,  &options.offloadHostReadGBps,
      &options.offloadDiskWriteGBps,  &options.offloadDiskReadGBps};
  auto items = splitKeyValueList(
      "offload-rates", text, names, "rate",
      "device-gbps, gemm-tflops, host-write-gbps, host-read-gbps, "
      "disk-write-gbps or disk-read-gbps, each =<positive number> (any "
      "subset)",
      why);
  if (mlir::failed(items))
    return mlir::failure();
  for (auto [key, value] : *items) {
    double rate;
    // getAsDouble takes "inf" and "nan": the pass would refuse them later,
    // without naming the flag.
    if (value.getAsDouble(rate) || !(rate > 0) || !std::isfinite(rate)) {
      why = ("--offload-rates: " + names[key] +
             " must be a positive, finite number, got '" + value + "'")
                .str();
      return mlir::failure();
    }
    *rates[key] = rate;
  }
  return mlir::success();
}

/// Parses and verifies `input`; diagnostics are reported through `sourceMgr`.
mlir::OwningOpRef<mlir::ModuleOp>
loadModel(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return nullptr;
  if (mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

std::optional<std::string> envVar(const char *name) {
  std::optional<std::string> value = llvm::sys::Process::GetEnv(name);
  if (value && value->empty())
    return std::nullopt;
  return value;
}

/// The CUDA toolkit directory, or "" with `why` set.
std::string findCudaToolkit(std::string &why) {
  std::string dir = cudaPath;
  if (dir.empty())
    for (const char *name : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
      if (std::optional<std::string> value = envVar(name)) {
        dir = *value;
        break;
      }
  if (dir.empty())
    dir = "/usr/local/cuda";
  llvm::SmallString<256> ptxas(dir);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (llvm::sys::fs::can_execute(ptxas))
    return dir;
  // ptxas on PATH is what the NVVM serializer falls back to.
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("ptxas"))
    return llvm::sys::path::parent_path(llvm::sys::path::parent_path(*onPath))
        .str();
  why = "ptxas not found in " + dir +
        "/bin nor on PATH; install the CUDA toolkit or pass --cuda-path=<dir>";
  return "";
}

/// libhector_runtime.so for CUDA libraries, or "" with `why` set.
std::string findRuntimeLibrary(const char *argv0, std::string &why) {
  std::string path = runtimeLib;
  if (path.empty())
    if (std::optional<std::string> value = envVar("HECTOR_RUNTIME_LIB"))
      path = *value;
  if (path.empty()) {
    // <build>/bin/hectorc -> <build>/runtime/libhector_runtime.so
    static int anchor;
    std::string exe = llvm::sys::fs::getMainExecutable(argv0, &anchor);
    llvm::SmallString<256> guess(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
    llvm::sys::path::append(guess, "runtime", kRuntimeName);
    path = guess.str().str();
  }
  if (llvm::sys::fs::is_regular_file(path))
    return path;
  why = std::string(kRuntimeName) + " not found at '" + path +
        "'; build the runtime (target hector_runtime) or pass "
        "--runtime-lib=<path> (or set HECTOR_RUNTIME_LIB)";
  return "";
}

/// How host code is compiled: CPU libraries get --cpu and their runtime,
/// the host side of CUDA libraries is generic.
hector::HostCodeOptions hostCodeOptions() {
  hector::HostCodeOptions options;
  options.optLevel = optLevel;
  if (target == Target::CPU)
    options.cpu = hostCPU;
  return options;
}

/// True when both files exist and hold the same bytes.
bool sameContents(llvm::StringRef a, llvm::StringRef b) {
  auto first = llvm::MemoryBuffer::getFile(a, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  auto second = llvm::MemoryBuffer::getFile(b, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  return first && second &&
         (*first)->getBuffer() == (*second)->getBuffer();
}

bool isBefore(EmitStage a, EmitStage b) {
  return static_cast<int>(a) < static_cast<int>(b);
}

/// Writes the shared library, its manifest and (cuda) the runtime beside it.
int writeLibrary(mlir::ModuleOp module,
                 llvm::ArrayRef<hector::EntryPoint> entries,
                 const std::string &runtime) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      hector::translateToLLVMIR(module, llvmContext, hostCodeOptions());
  if (!llvmModule)
    return 1;

  llvm::SmallString<128> object;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("hectorc", "o", object))
    return fail("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObject(object);
  std::string error;
  if (mlir::failed(hector::emitObjectFile(*llvmModule, object, optLevel, error)))
    return fail(error);

  hector::LinkOptions link;
  link.driver = linkerDriver;
  link.object = object.str().str();
  link.output = outputFilename;
  link.runtimeLibrary = runtime;
  if (mlir::failed(hector::linkSharedLibrary(link, error))) {
    llvm::sys::fs::remove(outputFilename);
    return fail(error);
  }

  llvm::StringRef outDir = llvm::sys::path::parent_path(outputFilename);
  if (!runtime.empty()) {
    llvm::SmallString<256> copy(outDir);
    llvm::sys::path::append(copy, kRuntimeName);
    if (!llvm::sys::fs::equivalent(runtime, copy) &&
        !sameContents(runtime, copy)) {
      // A process may have the copy there loaded (a library built into the
      // same directory before): never rewrite it in place, which would
      // change its mapped pages under that process; replace the file.
      llvm::SmallString<256> fresh(copy);
      fresh += ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
      if (std::error_code ec = llvm::sys::fs::copy_file(runtime, fresh))
        return fail("cannot copy " + runtime + " to " + fresh + ": " +
                    ec.message());
      if (std::error_code ec = llvm::sys::fs::rename(fresh, copy)) {
        llvm::sys::fs::remove(fresh);
        return fail("cannot move " + fresh + " to " + copy + ": " +
                    ec.message());
      }
    }
  }

  hector::ManifestInfo info;
  info.target = hector::targetName(target).str();
  info.gpuArch = target == Target::CUDA ? gpuArch.getValue() : "";
  info.library = llvm::sys::path::filename(outputFilename).str();
  info.runtime = runtime.empty() ? "" : kRuntimeName;
  info.hectorcVersion = kVersion;
  std::string manifestPath = outputFilename + ".json";
  std::unique_ptr<llvm::ToolOutputFile> manifest =
      mlir::openOutputFile(manifestPath, &error);
  if (!manifest)
    return fail(error);
  manifest->os() << hector::renderManifest(entries, info);
  manifest->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --mlir-print-ir-after-all and friends work on hectorc's pipelines too
  // (hidden from --help).
  mlir::registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(hectorCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "hectorc " << kVersion << " (LLVM/MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "hectorc: compile relational GNN models written in the hgraph "
      "inter-operator IR.\n\n"
      "Reads <model.mlir> (or stdin for '-') and writes the stage named by "
      "--emit to -o (or stdout). A module already lowered to func.func over "
      "memrefs (the htmpl or loops stage) is accepted too: stages it has "
      "passed are no-ops. Errors are reported as 'file:line:col: error: "
      "message' with a non-zero exit status.\n\n"
      "  hectorc model.mlir --target=cpu -o libmodel.so   # + libmodel.so.json\n"
      "  hectorc model.mlir --target=cuda -o libmodel.so  # + libhector_runtime.so\n"
      "  hectorc model.mlir --target=cuda --emit=ptx\n");

  // --emit defaults to lib when a library is evidently asked for.
  EmitStage emit = emitStage;
  if (emitStage.getNumOccurrences() == 0 &&
      (target.getNumOccurrences() > 0 ||
       llvm::StringRef(outputFilename).ends_with(".so")))
    emit = EmitStage::Lib;
  if ((emit == EmitStage::GPU || emit == EmitStage::PTX) &&
      target != Target::CUDA)
    return fail("--emit=" +
                std::string(emit == EmitStage::GPU ? "gpu" : "ptx") +
                " needs --target=cuda");
  if (emit == EmitStage::Lib && outputFilename == "-")
    return fail("--emit=lib writes a shared library: give it a file with "
                "-o lib<model>.so");
  if (emit == EmitStage::Lib) {
    llvm::StringRef dir = llvm::sys::path::parent_path(outputFilename);
    if (!dir.empty() && !llvm::sys::fs::is_directory(dir))
      return fail("cannot write " + outputFilename + ": the directory '" + dir +
                  "' does not exist");
  }
  if (optLevel < 0 || optLevel > 3)
    return fail("--opt-level must be 0, 1, 2 or 3");
  if (gpuBlockSize < 1 || gpuBlockSize > 1024)
    return fail("--gpu-block-size must be in [1, 1024]");
  if (target == Target::CPU) {
    std::string why;
    if (mlir::failed(hector::checkHostCPU(hostCPU, why)))
      return fail(why);
  }

  hector::PipelineOptions options;
  options.gpuArch = gpuArch;
  options.gpuFeatures = gpuFeatures;
  options.gpuBinaryFormat = emit == EmitStage::PTX ? "isa" : "fatbin";
  options.optLevel = optLevel;
  options.gpuBlockSize = gpuBlockSize;
  options.gpuTemplates = gpuTemplates;
  options.traversalLanes = traversalLanes;
  options.precision = precision;
  options.gemmStaging = gemmStaging;
  options.gemmBlocksPerSM = gemmBlocksPerSM;
  options.training = training;
  options.savePolicy = savePolicy;
  if (savePolicy != "materialized" && savePolicy != "all" &&
      savePolicy != "none")
    return fail("--save must be materialized, all or none");
  if (offloadMode != "none" && offloadMode != "host" &&
      offloadMode != "disk" && offloadMode != "auto")
    return fail("--offload must be none, host, disk or auto");
  if (offloadMode != "none" && !training)
    return fail("--offload plans a training step: add --training");
  if (offloadCapacityMiB < 0)
    return fail("--offload-capacity-mib must be non-negative");
  options.offloadMode = offloadMode;
  options.offloadCapacityMiB = offloadCapacityMiB;
  {
    std::string why;
    if (mlir::failed(setOffloadRates(offloadRates, options, why)))
      return fail(why);
  }
  options.linearReordering =
      variant == Variant::Reorder || variant == Variant::Both;
  options.compactMaterialization =
      variant == Variant::Compact || variant == Variant::Both;
  {
    std::string why;
    if (mlir::failed(setGraphSizes(graphSizes, options, why)))
      return fail(why);
  }
  options.typedEndpoints = typedEndpoints;
  options.splitSoftmax = splitSoftmax;
  options.fuseSoftmaxAggregate = fuseSoftmaxAggregate;
  if (precision == hector::Precision::TF32 && target != Target::CUDA)
    return fail("--precision=tf32 needs --target=cuda (the CPU GEMMs "
                "multiply in fp32)");
  if (!hostResident.empty() && target != Target::CUDA)
    return fail("--host-resident needs --target=cuda (in a CPU library every "
                "buffer is host memory already)");
  for (const std::string &name : hostResident)
    if (name.empty() || !llvm::all_of(name, [](char c) {
          return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
        }))
      return fail("--host-resident: '" + name +
                  "' is not an argument name (letters, digits, '_', '.', "
                  "'-')");
  options.hostResident =
      std::vector<std::string>(hostResident.begin(), hostResident.end());

  std::string errorMessage;
  if (target == Target::CUDA &&
      mlir::failed(hector::checkGPUTarget(options, errorMessage)))
    return fail(errorMessage);
  // Check the tools a CUDA build needs before any work.
  std::string runtime;
  if (target == Target::CUDA && !isBefore(emit, EmitStage::LLVM)) {
    std::string toolkit = findCudaToolkit(errorMessage);
    if (toolkit.empty())
      return fail(errorMessage);
    // gpu-module-to-binary's toolkit: ptxas and libdevice come from here.
    options.cudaToolkit = toolkit;
    if (emit == EmitStage::Lib) {
      runtime = findRuntimeLibrary(argv[0], errorMessage);
      if (runtime.empty())
        return fail(errorMessage);
    }
  }
  // A CPU library whose plan moves values calls the runtime's tensor cache.
  if (target == Target::CPU && offloadMode != "none" &&
      emit == EmitStage::Lib) {
    runtime = findRuntimeLibrary(argv[0], errorMessage);
    if (runtime.empty())
      return fail(errorMessage);
  }

  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input)
    return fail(errorMessage);

  mlir::DialectRegistry registry;
  hector::registerTargetDialects(registry);
  hector::registerTargetPasses();
  mlir::MLIRContext context(registry);
  // Errors are reported, not aborted on: no crash reproducer, no stack dump.
  context.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(sourceMgr, context);
  if (!module)
    return 1;
  // The whole library is for graphs with typed endpoints: every entry's
  // manifest says so (prepareEntryPoints), whichever uses the assumption.
  if (typedEndpoints)
    (*module)->setAttr("hector.typed_endpoints",
                       mlir::UnitAttr::get(&context));

  // Lower stage by stage up to the one asked for.
  std::vector<hector::EntryPoint> entries;
  auto lowerTo = [&](Stage stage) {
    return hector::runStage(*module, target, stage, options);
  };
  Stage last = Stage::HGraph;
  switch (emit) {
  case EmitStage::HGraph:
    break;
  case EmitStage::HTmpl:
    last = Stage::HTmpl;
    break;
  case EmitStage::Loops:
    last = Stage::Loops;
    break;
  case EmitStage::GPU:
    last = Stage::GPU;
    break;
  default:
    last = Stage::LLVM;
    break;
  }
  for (Stage stage :
       {Stage::HGraph, Stage::HTmpl, Stage::Loops, Stage::GPU, Stage::LLVM}) {
    if (static_cast<int>(stage) > static_cast<int>(last))
      break;
    if (stage == Stage::GPU) {
      // Entry points are fixed (and marked for their C interface) right
      // after the loops, before any lowering towards the target.
      mlir::FailureOr<std::vector<hector::EntryPoint>> found =
          hector::prepareEntryPoints(*module);
      if (mlir::failed(found))
        return 1;
      entries = std::move(*found);
    }
    if (mlir::failed(lowerTo(stage)))
      return 1;
  }

  if (emit == EmitStage::Lib)
    return writeLibrary(*module, entries, runtime);

  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output)
    return fail(errorMessage);

  switch (emit) {
  case EmitStage::PTX:
    if (mlir::failed(hector::writePTX(*module, output->os())))
      return 1;
    break;
  case EmitStage::LLVMIR: {
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        hector::translateToLLVMIR(*module, llvmContext, hostCodeOptions());
    if (!llvmModule)
      return 1;
    llvmModule->print(output->os(), nullptr);
    break;
  }
  default: {
    mlir::OpPrintingFlags flags;
    if (emitGeneric)
      flags.printGenericOpForm();
    module->print(output->os(), flags);
    output->os() << "\n";
    break;
  }
  }
  output->keep();
  return 0;
}
