//===- hectorc.cpp - the Hector compiler driver -----------------*- C++ -*-===//
//
// Reads a model in the inter-operator IR (hgraph) and writes the stage named
// by --emit. Diagnostics go to stderr as `file:line:col: error: ...` and the
// exit status is non-zero on any error.
//
//===----------------------------------------------------------------------===//

#include "hector/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace {

/// The stages hectorc can write.
enum class EmitStage {
  /// Parsed and verified inter-operator IR.
  HGraph,
};

cl::OptionCategory hectorCategory("hectorc options");

cl::opt<std::string> inputFilename(cl::Positional,
                                   cl::desc("<model.mlir | - for stdin>"),
                                   cl::init("-"), cl::cat(hectorCategory));

cl::opt<std::string> outputFilename("o",
                                    cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("file"), cl::init("-"),
                                    cl::cat(hectorCategory));

cl::opt<EmitStage> emitStage(
    "emit", cl::desc("Stage to write:"), cl::init(EmitStage::HGraph),
    cl::values(clEnumValN(EmitStage::HGraph, "hgraph",
                          "verified inter-operator IR (default)")),
    cl::cat(hectorCategory));

cl::opt<bool> emitGeneric("mlir-print-generic",
                          cl::desc("Print IR in the generic operation form"),
                          cl::init(false), cl::cat(hectorCategory));

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

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(hectorCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "hectorc: compile relational GNN models written in the hgraph "
      "inter-operator IR.\n\n"
      "Reads <model.mlir> (or stdin for '-') and writes the stage named by "
      "--emit to -o (or stdout). Errors are reported as "
      "'file:line:col: error: message' with a non-zero exit status.\n");

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << "hectorc: error: " << errorMessage << "\n";
    return 1;
  }

  mlir::DialectRegistry registry;
  hector::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  // Errors are reported, not aborted on: no crash reproducer, no stack dump.
  context.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(sourceMgr, context);
  if (!module)
    return 1;

  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "hectorc: error: " << errorMessage << "\n";
    return 1;
  }

  switch (emitStage) {
  case EmitStage::HGraph: {
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
