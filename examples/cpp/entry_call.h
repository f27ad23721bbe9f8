// The plumbing the example programs share (README.md): a library built by
// hectorc with its manifest, a graph file with its runtime preprocessing,
// one buffer per entry-point argument shaped from the manifest, and calls of
// entry points on the CPU or on GPU 0. For a CUDA library every buffer gets
// a device copy that stays on the GPU between calls (so f_bwd reads the
// saved tensors f_fwd left there); host and device copies are synchronised
// only when one of them changed.
#ifndef HECTOR_EXAMPLES_CPP_ENTRY_CALL_H
#define HECTOR_EXAMPLES_CPP_ENTRY_CALL_H

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hector/graph.h"
#include "manifest.h"

namespace example {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A library from `hectorc --target=cpu|cuda -o lib.so`, loaded with dlopen,
// and its manifest <lib.so>.json.
class Library {
public:
  explicit Library(const std::string &path);
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;

  const std::string &path() const { return path_; }
  const Manifest &manifest() const { return manifest_; }
  bool cuda() const { return manifest_.target == "cuda"; }
  void *handle() const { return handle_; }
  // The C function of `entry` (_mlir_ciface_<name>); throws if missing.
  void *function(const EntrySpec &entry) const;

private:
  std::string path_;
  Manifest manifest_;
  void *handle_ = nullptr;
};

// A graph read from the text format of README.md, with the preprocessing
// arrays libhector_runtime builds for it (docs/compilation.md).
class Graph {
public:
  explicit Graph(const std::string &file);
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &file() const { return file_; }
  // Shape symbols: N, E, T, R, P.
  const std::map<std::string, int64_t> &symbols() const { return symbols_; }
  int64_t size(const std::string &symbol) const { return symbols_.at(symbol); }
  // "N = 4, E = 3, T = 2, R = 3, P = 3"
  std::string sizesText() const;
  // The runtime's array for graph argument `spec` of `count` elements;
  // throws if the runtime builds no such array or builds it otherwise.
  void *array(const ArgSpec &spec, int64_t count) const;

private:
  std::string file_;
  hector_graph *graph_ = nullptr;
  std::map<std::string, int64_t> symbols_;
};

// One argument's buffer: host memory (owned, or a graph array of the
// runtime) and, for a CUDA library, a device copy that Runner manages.
struct Tensor {
  Tensor() = default;
  // Moves keep `host` valid (it may point into `storage`); copies would not.
  Tensor(Tensor &&) = default;
  Tensor &operator=(Tensor &&) = default;
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;

  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t count = 0;          // elements (every dtype here is 4 bytes wide)
  std::vector<float> storage; // the host data of non-graph tensors
  void *host = nullptr;       // storage.data() or the runtime's array
  std::string source;         // where the values come from, for summaries

  void *device = nullptr;     // owned by the Runner that made it
  bool hostCurrent = true;    // the host copy holds the latest values
  bool deviceCurrent = false; // the device copy does

  size_t bytes() const { return size_t(count) * 4; }
  float *values() { return storage.data(); }
  const float *values() const { return storage.data(); }
  // Call after writing the host copy.
  void hostChanged() {
    hostCurrent = true;
    deviceCurrent = false;
  }
};

std::string shapeText(const std::vector<int64_t> &shape); // "[4, 64]"

// The shape of argument `spec` on `graph`, checked (rank, size bounds).
std::vector<int64_t> shapeOf(const ArgSpec &spec, const Graph &graph);

// Throws unless `tensor` has the dtype and shape that argument `spec` of
// `entry` has on `graph`.
void checkArgument(const EntrySpec &entry, const ArgSpec &spec,
                   const Tensor &tensor, const Graph &graph);

// The tensor of argument `spec`: a graph argument is the runtime's array;
// any other must be float32 and starts zeroed.
Tensor makeTensor(const ArgSpec &spec, const Graph &graph);

// The tensors of every argument of `entry`, in order. Inputs and weights
// (and any other argument the entry reads but that is no graph array) are
// taken from the .npy file that `files` names for them, else generated with
// fillSeeded (values.h) from `seed` and their position (scale 1/sqrt(last
// dimension) for weights, 1 otherwise); outputs are zeroed. Throws for
// names in `files` that are no input or weight of the entry.
std::vector<Tensor>
makeArguments(const EntrySpec &entry, const Graph &graph, uint64_t seed,
              const std::map<std::string, std::string> &files);

// "  weight W      float32 [3, 64, 64]    seed 0"
std::string argumentLine(const ArgSpec &spec, const Tensor &tensor);

// Calls entry points of a library on a graph: host buffers for a CPU
// library; for a CUDA one GPU 0, a stream, and device copies of the
// tensors (freed when the Runner goes).
class Runner {
public:
  Runner(const Library &library, const Graph &graph);
  ~Runner();
  Runner(const Runner &) = delete;
  Runner &operator=(const Runner &) = delete;

  // Calls `entry` with args[i] as its i-th argument; checks every tensor's
  // dtype and shape against the manifest first. For a CUDA library it
  // copies to the device the inputs whose device copy is stale, allocates
  // device memory for the outputs, checks the launch status, and marks the
  // outputs as current on the device only.
  void call(const EntrySpec &entry, const std::vector<Tensor *> &args);
  // Makes the host copy of `tensor` current (copies it back from the GPU).
  void fetch(Tensor &tensor);

private:
  struct Cuda;
  void toDevice(Tensor &tensor, bool copy);

  const Library &library_;
  const Graph &graph_;
  std::unique_ptr<Cuda> cuda_; // null for a CPU library
};

} // namespace example

#endif // HECTOR_EXAMPLES_CPP_ENTRY_CALL_H
