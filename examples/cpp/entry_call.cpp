#include "entry_call.h"

#include <dlfcn.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "graph_file.h"
#include "hector/model.h"
#include "hector/runtime.h"
#include "values.h"

namespace example {
namespace {

void checkRuntime(int status, const std::string &what) {
  if (status != HECTOR_OK)
    throw Error(what + ": " + hector_last_error() + " [" +
                hector_status_name(status) + "]");
}

std::string graphArrayNames() {
  std::string names;
  for (int id = 0; id < HECTOR_GRAPH_NUM_ARRAYS; ++id)
    names += std::string(id ? ", " : "") + hector_graph_array_name(id);
  return names;
}

// An entry takes one pointer per argument; the count is known only at run
// time, so calls go through a table of fixed-arity trampolines.
using Caller = void (*)(void *fn, void *const *args);
constexpr size_t kMaxArgs = 64;

template <size_t... I>
void callWith(void *fn, void *const *args, std::index_sequence<I...>) {
  using Fn = void (*)(
      std::conditional_t<true, void *, std::integral_constant<size_t, I>>...);
  reinterpret_cast<Fn>(fn)(args[I]...);
}
template <size_t N> void callN(void *fn, void *const *args) {
  callWith(fn, args, std::make_index_sequence<N>{});
}
template <size_t... N>
constexpr std::array<Caller, sizeof...(N)>
makeCallers(std::index_sequence<N...>) {
  return {&callN<N>...};
}
constexpr auto kCallers = makeCallers(std::make_index_sequence<kMaxArgs + 1>{});

// Calls `fn` with descriptors of `data[i]` shaped like args[i].
void callWithData(void *fn, const EntrySpec &entry,
                  const std::vector<Tensor *> &args,
                  const std::vector<void *> &data) {
  std::vector<hector_memref> descriptors(args.size());
  std::vector<void *> pointers;
  for (size_t i = 0; i < args.size(); ++i) {
    if (hector_memref_init(&descriptors[i], data[i], int(args[i]->shape.size()),
                           args[i]->shape.data()) != 0)
      throw Error("argument '" + entry.args[i].name + "': bad descriptor");
    pointers.push_back(&descriptors[i]);
  }
  kCallers[pointers.size()](fn, pointers.data());
}

template <typename T> T symbolOf(void *library, const char *name) {
  void *p = dlsym(library, name);
  if (!p)
    throw Error(std::string("the CUDA library's runtime has no ") + name +
                " (an older libhector_runtime.so?)");
  return reinterpret_cast<T>(p);
}

} // namespace

// ---- Library ----

Library::Library(const std::string &path)
    : path_(path), manifest_(readManifest(path + ".json")) {
  // A path without '/' would make dlopen search the system directories.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_)
    throw Error(std::string("cannot load the library: ") + dlerror());
}

Library::~Library() { dlclose(handle_); }

void *Library::function(const EntrySpec &entry) const {
  void *fn = dlsym(handle_, entry.symbol.c_str());
  if (!fn)
    throw Error(path_ + " has no symbol " + entry.symbol + " (entry '" +
                entry.name + "' of its manifest)");
  return fn;
}

// ---- Graph ----

Graph::Graph(const std::string &file) : file_(file) {
  GraphData data = readGraphFile(file);
  auto ids = [](const std::vector<int64_t> &v) {
    return hector_index_array{v.data(), int64_t(v.size()), 8, 0};
  };
  hector_graph_input in{ids(data.nodeType), ids(data.src),
                        ids(data.dst),      ids(data.etype),
                        data.numNodeTypes,  data.numEdgeTypes};
  checkRuntime(hector_graph_build(&in, &graph_), "building the graph arrays");
  hector_graph_sizes sizes{};
  if (int status = hector_graph_get_sizes(graph_, &sizes);
      status != HECTOR_OK) {
    hector_graph_free(graph_);
    checkRuntime(status, "reading the graph sizes");
  }
  symbols_ = {{"N", sizes.num_nodes},
              {"E", sizes.num_edges},
              {"T", sizes.num_node_types},
              {"R", sizes.num_edge_types},
              {"P", sizes.num_pairs}};
}

Graph::~Graph() { hector_graph_free(graph_); }

std::string Graph::sizesText() const {
  std::string text;
  for (const char *symbol : {"N", "E", "T", "R", "P"})
    text += (text.empty() ? "" : ", ") + std::string(symbol) + " = " +
            std::to_string(symbols_.at(symbol));
  return text;
}

void *Graph::array(const ArgSpec &spec, int64_t count) const {
  std::string what = "argument '" + spec.name + "'";
  int id = 0;
  if (hector_graph_array_id_of(spec.name.c_str(), &id) != HECTOR_OK)
    throw Error(what +
                " has role graph, but the runtime builds no array of "
                "that name (it builds " +
                graphArrayNames() + ")");
  const void *data = nullptr;
  int64_t length = 0;
  int32_t dtype = 0;
  checkRuntime(hector_graph_array(graph_, id, &data, &length, &dtype),
               "reading graph array " + spec.name);
  std::string built = dtype == HECTOR_GRAPH_FLOAT32 ? "float32" : "int32";
  if (spec.dtype != built)
    throw Error(what + " has dtype " + spec.dtype +
                " in the manifest, but the runtime builds it as " + built);
  if (spec.shape.size() != 1 || length != count)
    throw Error(what + " must have shape " + spec.shapeText() + " = [" +
                std::to_string(count) + "], but the runtime built " +
                std::to_string(length) + " elements");
  // Generated code only reads graph arrays.
  return const_cast<void *>(data);
}

// ---- Tensors ----

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t k = 0; k < shape.size(); ++k)
    text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
}

std::vector<int64_t> shapeOf(const ArgSpec &spec, const Graph &graph) {
  std::string what = "argument '" + spec.name + "'";
  if (spec.shape.size() > HECTOR_MEMREF_MAX_RANK)
    throw Error(what + " has rank " + std::to_string(spec.shape.size()) +
                "; this program passes ranks up to " +
                std::to_string(HECTOR_MEMREF_MAX_RANK));
  std::vector<int64_t> shape;
  for (size_t k = 0; k < spec.shape.size(); ++k)
    shape.push_back(resolveDim(spec, k, graph.symbols()));
  // Bounded so that byte sizes cannot overflow.
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size > 0 && count > (int64_t(1) << 40) / size)
      throw Error(what + " would have shape " + shapeText(shape) +
                  ": too large (more than 2^40 elements)");
    count *= size;
  }
  return shape;
}

void checkArgument(const EntrySpec &entry, const ArgSpec &spec,
                   const Tensor &tensor, const Graph &graph) {
  std::vector<int64_t> shape = shapeOf(spec, graph);
  if (tensor.dtype != spec.dtype || tensor.shape != shape)
    throw Error("entry '" + entry.name + "' argument '" + spec.name +
                "' must be " + spec.dtype + " " + shapeText(shape) +
                ", but the buffer for it is " + tensor.dtype + " " +
                shapeText(tensor.shape));
}

Tensor makeTensor(const ArgSpec &spec, const Graph &graph) {
  Tensor tensor;
  tensor.name = spec.name;
  tensor.dtype = spec.dtype;
  tensor.shape = shapeOf(spec, graph);
  tensor.count = 1;
  for (int64_t size : tensor.shape)
    tensor.count *= size;
  if (spec.role == "graph") {
    tensor.host = graph.array(spec, tensor.count);
    tensor.source = "graph array";
    return tensor;
  }
  if (spec.dtype != "float32")
    throw Error(
        "argument '" + spec.name + "' has dtype " + spec.dtype +
        "; this program makes float32 inputs, weights and outputs only");
  tensor.storage.assign(size_t(tensor.count), 0.0f);
  tensor.host = tensor.storage.empty() ? nullptr : tensor.storage.data();
  tensor.source = "zeroed";
  return tensor;
}

std::vector<Tensor>
makeArguments(const EntrySpec &entry, const Graph &graph, uint64_t seed,
              const std::map<std::string, std::string> &files) {
  std::map<std::string, std::string> unused = files;
  std::vector<Tensor> tensors;
  for (const ArgSpec &spec : entry.args) {
    Tensor tensor = makeTensor(spec, graph);
    auto file = unused.find(spec.name);
    if (file != unused.end() && (spec.output || spec.role == "graph"))
      throw Error("--arg " + spec.name + ": '" + spec.name + "' is an " +
                  (spec.output ? "output" : "array of the graph") +
                  "; only inputs and weights can be read");
    if (spec.output) {
      tensor.source = spec.role + " (zeroed)";
    } else if (file != unused.end()) {
      tensor.storage = readNpyFloat32(file->second, tensor.shape,
                                      "argument '" + spec.name + "'");
      tensor.host = tensor.storage.empty() ? nullptr : tensor.storage.data();
      tensor.source = file->second;
      unused.erase(file);
    } else if (spec.role != "graph") {
      // Weights of width d get [-1/sqrt(d), 1/sqrt(d)) so that layers stay
      // well scaled; inputs get [-1, 1).
      double scale = 1.0;
      if (spec.role == "weight" && !tensor.shape.empty() &&
          tensor.shape.back() > 0)
        scale = 1.0 / std::sqrt(double(tensor.shape.back()));
      fillSeeded(tensor.values(), tensor.count, seed, spec.index, scale);
      tensor.source = "seed " + std::to_string(seed);
    }
    tensors.push_back(std::move(tensor));
  }
  if (!unused.empty()) {
    std::string names;
    for (const ArgSpec &spec : entry.args)
      if (!spec.output && spec.role != "graph")
        names += (names.empty() ? "" : ", ") + spec.name;
    throw Error("--arg " + unused.begin()->first + ": entry '" + entry.name +
                "' has no input or weight of that name (it has " +
                (names.empty() ? "none" : names) + ")");
  }
  return tensors;
}

std::string argumentLine(const ArgSpec &spec, const Tensor &tensor) {
  char line[512];
  std::snprintf(line, sizeof line, "  %-11s %-14s %-7s %-14s %s",
                spec.role.c_str(), spec.name.c_str(), spec.dtype.c_str(),
                shapeText(tensor.shape).c_str(), tensor.source.c_str());
  return line;
}

// ---- Runner ----

// The caller's side of the launch runtime (hector/launch.h) and the mgpu*
// memory functions it exports for generated code, resolved through the
// library's handle: the copy of libhector_runtime.so the library is bound
// to. No CUDA header or library is needed to build this.
struct Runner::Cuda {
  explicit Cuda(void *lib)
      : setDevice(symbolOf<int (*)(int)>(lib, "hector_set_device")),
        status(symbolOf<int (*)()>(lib, "hector_launch_status")),
        error(symbolOf<const char *(*)()>(lib, "hector_launch_error")),
        clear(symbolOf<void (*)()>(lib, "hector_launch_clear")),
        lastError(symbolOf<const char *(*)()>(lib, "hector_last_error")),
        streamCreate(symbolOf<void *(*)()>(lib, "mgpuStreamCreate")),
        streamSynchronize(
            symbolOf<void (*)(void *)>(lib, "mgpuStreamSynchronize")),
        streamDestroy(symbolOf<void (*)(void *)>(lib, "mgpuStreamDestroy")),
        memAlloc(
            symbolOf<void *(*)(uint64_t, void *, bool)>(lib, "mgpuMemAlloc")),
        memFree(symbolOf<void (*)(void *, void *)>(lib, "mgpuMemFree")),
        memcpy(symbolOf<void (*)(void *, void *, size_t, void *)>(
            lib, "mgpuMemcpy")) {}

  ~Cuda() {
    for (void *p : allocations)
      memFree(p, stream);
    if (stream)
      streamDestroy(stream);
  }

  // Throws if a launch-runtime call since the last clear() failed.
  void check(const std::string &what) const {
    if (status() != HECTOR_OK)
      throw Error(what + ": " + error() + " [" + hector_status_name(status()) +
                  "]");
  }

  int (*setDevice)(int);
  int (*status)();
  const char *(*error)();
  void (*clear)();
  const char *(*lastError)();
  void *(*streamCreate)();
  void (*streamSynchronize)(void *);
  void (*streamDestroy)(void *);
  void *(*memAlloc)(uint64_t, void *, bool);
  void (*memFree)(void *, void *);
  void (*memcpy)(void *, void *, size_t, void *);

  void *stream = nullptr;
  std::vector<void *> allocations;
};

Runner::Runner(const Library &library, const Graph &graph)
    : library_(library), graph_(graph) {
  if (!library.cuda())
    return;
  cuda_ = std::make_unique<Cuda>(library.handle());
  if (cuda_->setDevice(0) != HECTOR_OK)
    throw Error(std::string("the library was built with --target=cuda, but "
                            "GPU 0 cannot be used: ") +
                cuda_->lastError());
  cuda_->clear();
  cuda_->stream = cuda_->streamCreate();
  cuda_->check("creating a CUDA stream");
}

Runner::~Runner() = default;

void Runner::toDevice(Tensor &tensor, bool copy) {
  Cuda &cuda = *cuda_;
  if (!tensor.device && tensor.bytes()) {
    tensor.device = cuda.memAlloc(tensor.bytes(), cuda.stream, false);
    cuda.check("allocating " + std::to_string(tensor.bytes()) + " bytes for '" +
               tensor.name + "'");
    cuda.allocations.push_back(tensor.device);
    copy = true; // new memory starts as the host copy (outputs: zeroed)
  }
  if (copy && !tensor.deviceCurrent && tensor.bytes())
    cuda.memcpy(tensor.device, tensor.host, tensor.bytes(), cuda.stream);
  if (copy || !tensor.bytes())
    tensor.deviceCurrent = true;
}

void Runner::call(const EntrySpec &entry, const std::vector<Tensor *> &args) {
  if (entry.args.size() > kMaxArgs)
    throw Error(
        "entry '" + entry.name + "' has " + std::to_string(entry.args.size()) +
        " arguments; this program passes at most " + std::to_string(kMaxArgs));
  if (args.size() != entry.args.size())
    throw Error("entry '" + entry.name + "' takes " +
                std::to_string(entry.args.size()) + " arguments, given " +
                std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    checkArgument(entry, entry.args[i], *args[i], graph_);
  void *fn = library_.function(entry);

  if (!cuda_) {
    std::vector<void *> data;
    for (Tensor *tensor : args)
      data.push_back(tensor->host);
    // A CPU library reports a temporary it could not allocate (past its cap,
    // $HECTOR_TEMPORARY_CAP, or out of memory) in its own status for this
    // thread (hector/temporaries.h); one built before that has none.
    using Status = int (*)();
    using Message = const char *(*)();
    using Clear = void (*)();
    void *handle = library_.handle();
    auto status = reinterpret_cast<Status>(dlsym(handle, "hector_cpu_status"));
    auto message = reinterpret_cast<Message>(dlsym(handle, "hector_cpu_error"));
    auto clear = reinterpret_cast<Clear>(dlsym(handle, "hector_cpu_clear"));
    bool checked = status && message && clear;
    if (checked)
      clear();
    callWithData(fn, entry, args, data);
    if (checked && status() != HECTOR_OK) {
      std::string text = std::string("running entry '") + entry.name +
                         "': " + message() + " [" +
                         hector_status_name(status()) + "]";
      clear();
      throw Error(text);
    }
    return;
  }

  Cuda &cuda = *cuda_;
  cuda.clear();
  std::vector<void *> data;
  for (size_t i = 0; i < args.size(); ++i) {
    toDevice(*args[i], !entry.args[i].output);
    data.push_back(args[i]->device);
  }
  cuda.streamSynchronize(cuda.stream);
  cuda.check("copying the arguments of '" + entry.name + "' to the GPU");
  cuda.clear();
  callWithData(fn, entry, args, data); // waits for its own stream at the end
  cuda.check("running entry '" + entry.name + "'");
  for (size_t i = 0; i < args.size(); ++i)
    if (entry.args[i].output) {
      args[i]->deviceCurrent = true;
      args[i]->hostCurrent = false;
    }
}

void Runner::fetch(Tensor &tensor) {
  if (tensor.hostCurrent)
    return;
  Cuda &cuda = *cuda_;
  cuda.clear();
  if (tensor.bytes())
    cuda.memcpy(tensor.host, tensor.device, tensor.bytes(), cuda.stream);
  cuda.streamSynchronize(cuda.stream);
  cuda.check("copying '" + tensor.name + "' back from the GPU");
  tensor.hostCurrent = true;
}

} // namespace example
