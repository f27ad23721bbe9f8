// The JSON manifest `hectorc` writes next to a library (<lib>.json,
// docs/backends.md "Manifest"), read and checked with nlohmann-json.
#ifndef HECTOR_EXAMPLES_CPP_MANIFEST_H
#define HECTOR_EXAMPLES_CPP_MANIFEST_H

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One dimension of an argument's shape: a symbol ("N", "R+1"), a static size,
// or unknown (null in the manifest).
struct Dim {
  std::string symbol; // empty unless a symbol
  int64_t plus = 0;   // the "+c" of "R+1"
  std::optional<int64_t> size; // a static size
  std::string text() const;    // "R+1", "64" or "?"
};

struct ArgSpec {
  int index = 0;
  // graph, input, weight, output; training entries add saved (an output of
  // f_fwd, an input of f_bwd), grad_output and grad (docs/compilation.md).
  std::string role;
  bool output = false; // a buffer the caller allocates and the entry fills
  std::string name;
  std::string dtype; // numpy name: float32, int32, ...
  std::vector<Dim> shape;
  std::vector<std::optional<int64_t>> sizes; // the manifest's "sizes"
  std::string shapeText() const;             // "[N, 64]"
};

struct EntrySpec {
  std::string name;
  std::string symbol; // _mlir_ciface_<name>
  // inference, training_forward or training_backward; "primal" names the
  // model function f that f, f_fwd and f_bwd belong to (absent: inference,
  // the entry itself).
  std::string kind;
  std::string primal;
  std::vector<ArgSpec> args;
};

struct Manifest {
  std::string path;
  std::string target; // cpu or cuda
  std::vector<EntrySpec> entries;

  // The entry called `name`, or the only inference entry when `name` is
  // empty; throws ManifestError naming the entries otherwise.
  const EntrySpec &entry(const std::string &name) const;

  // The training forward and backward entries of function `primal` (an
  // inference entry); throws ManifestError when the library has none (it
  // was built without `hectorc --training`).
  struct Training {
    const EntrySpec *forward;
    const EntrySpec *backward;
  };
  Training training(const std::string &primal) const;
};

// Reads and checks `path`; throws ManifestError.
Manifest readManifest(const std::string &path);

// The size of `dim` given the symbol values; throws ManifestError (naming
// `arg`) for unknown symbols and unknown sizes.
int64_t resolveDim(const ArgSpec &arg, size_t k,
                   const std::map<std::string, int64_t> &symbols);

} // namespace example

#endif // HECTOR_EXAMPLES_CPP_MANIFEST_H
