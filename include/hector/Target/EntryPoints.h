//===- EntryPoints.h - entry points and the library manifest ----*- C++ -*-===//
//
// An entry point is a func.func the generated library exports through its C
// interface (`_mlir_ciface_<name>`). The manifest written beside the library
// describes each one so that loaders can check arguments before calling
// (docs/compilation.md, docs/backends.md).
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_TARGET_ENTRYPOINTS_H
#define HECTOR_TARGET_ENTRYPOINTS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hector {

/// One dimension of an argument's shape: a symbol ("E", "N+1") and/or a
/// size every call must match (-1: none), or neither (any size).
struct ShapeDim {
  std::string symbol;
  int64_t size = -1;
};

struct EntryArgument {
  /// "graph", "input", "weight", "output", or for training entries "saved",
  /// "grad_output", "grad".
  std::string role;
  std::string name;
  /// numpy spelling: "float32", "int32", ...
  std::string dtype;
  int64_t rank = 0;
  std::vector<ShapeDim> shape;
  /// A node-wise input that stays in pinned, mapped host memory, read in
  /// place by the kernels (`host_resident = true` in `hector.arg`).
  bool hostResident = false;
};

/// A saved value an entry moves through the runtime's tensor cache instead
/// of a buffer argument (`hector.offload`, written by hgraph-to-htmpl for an
/// offload plan): a training forward evicts it, the backward prefetches it,
/// under the caller's key base + slot (hector/offload.h).
struct OffloadedValue {
  std::string name;
  /// "evict" or "prefetch".
  std::string direction;
  int64_t slot = 0;
  /// "host" or "disk" for an evict, else empty.
  std::string tier;
  std::vector<ShapeDim> shape;
};

struct EntryPoint {
  std::string name;
  /// The C interface symbol: `_mlir_ciface_<name>`.
  std::string symbol;
  /// "inference", "training_forward" or "training_backward" (the function
  /// attribute `hector.kind`, default "inference").
  std::string kind;
  /// The function this entry computes or differentiates (`hector.primal`,
  /// default the entry's own name).
  std::string primal;
  /// For graphs whose edge types each join one source node type to one
  /// destination node type only: set on every entry of a library built
  /// with `hectorc --typed-endpoints` (`hector.typed_endpoints` on the
  /// module), or any of whose functions carries `hector.typed_endpoints`
  /// (set where a weight slice is chosen through an edge type's endpoint
  /// type).
  bool typedEndpoints = false;
  std::vector<EntryArgument> arguments;
  std::vector<OffloadedValue> offloaded;
};

/// Finds the entry points of `module` (the functions marked `hector.entry`,
/// or, if none is, every public func.func with a body), checks that each
/// fits the runtime ABI (no results; memref arguments of a supported element
/// type with the identity layout; a well-formed `hector.arg` where present),
/// marks it `llvm.emit_c_interface`, and describes its arguments. Arguments
/// without `hector.arg` are named `arg<k>` and are outputs when the body
/// writes them, inputs otherwise. `hector.kind` and `hector.primal` string
/// attributes give the entry's kind and primal function; every entry is
/// typed_endpoints when the module or any entry function carries
/// `hector.typed_endpoints`. Errors are emitted at the function.
mlir::FailureOr<std::vector<EntryPoint>> prepareEntryPoints(mlir::ModuleOp module);

struct ManifestInfo {
  std::string target;
  /// Empty for the CPU target.
  std::string gpuArch;
  /// File names (no directory) of the library and, for CUDA, the runtime.
  std::string library;
  std::string runtime;
  std::string hectorcVersion;
};

/// The JSON manifest of a library exporting `entries`.
std::string renderManifest(llvm::ArrayRef<EntryPoint> entries,
                           const ManifestInfo &info);

} // namespace hector

#endif // HECTOR_TARGET_ENTRYPOINTS_H
