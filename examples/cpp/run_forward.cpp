// run_forward: runs one entry point of a library built by hectorc on a graph
// read from a text file, with seeded (or .npy) inputs and weights, and prints
// the output. See README.md.
//
//   run_forward <lib.so> <graph-file> [--entry NAME] [--seed S] [--out FILE]
//               [--arg NAME=FILE.npy]...
//
// Steps: read <lib.so>.json; dlopen the library; read the graph and build its
// preprocessing arrays with libhector_runtime (hector/graph.h); make every
// argument with the manifest's shape (symbols N, E, T, R, P from the graph);
// call _mlir_ciface_<entry> with memref descriptors (hector/model.h); print
// each output's shape, checksum and first rows. Every error is one message on
// stderr and exit status 1.
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graph_file.h"
#include "hector/graph.h"
#include "hector/model.h"
#include "hector/runtime.h"
#include "manifest.h"
#include "values.h"

namespace example {
namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char *kUsage =
    "usage: run_forward <lib.so> <graph-file> [--entry NAME] [--seed S]\n"
    "                   [--out FILE] [--arg NAME=FILE.npy]...\n"
    "  <lib.so>      a library from `hectorc model.mlir --target=cpu|cuda -o "
    "lib.so`\n"
    "                (its manifest <lib.so>.json must be beside it)\n"
    "  <graph-file>  header 'N E T R', N node types, E lines 'src dst etype'\n"
    "                ('#' starts a comment; see examples/cpp/README.md)\n"
    "  --entry NAME  the entry point to run (default: the only one)\n"
    "  --seed S      seed of the generated inputs and weights (default 0)\n"
    "  --out FILE    write the outputs as raw little-endian float32, in "
    "manifest order\n"
    "  --arg NAME=FILE.npy  take input or weight NAME from a float32 .npy "
    "file\n";

struct Options {
  std::string library, graphFile, entry, out;
  uint64_t seed = 0;
  std::map<std::string, std::string> argFiles;
};

uint64_t parseSeed(const std::string &text) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE)
    throw Error("--seed needs an unsigned 64-bit integer, got '" + text + "'");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      positional.push_back(arg);
      continue;
    }
    // --name VALUE or --name=VALUE.
    std::string name = arg, value;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (name == "--entry" || name == "--seed" || name == "--out" ||
               name == "--arg") {
      if (i + 1 == argc)
        throw Error(name + " needs a value\n" + kUsage);
      value = argv[++i];
    }
    if (name == "--entry")
      options.entry = value;
    else if (name == "--seed")
      options.seed = parseSeed(value);
    else if (name == "--out")
      options.out = value;
    else if (name == "--arg") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
        throw Error("--arg needs NAME=FILE.npy, got '" + value + "'");
      if (!options.argFiles.emplace(value.substr(0, eq), value.substr(eq + 1)).second)
        throw Error("--arg " + value.substr(0, eq) + " is given twice");
    } else
      throw Error("unknown option '" + arg + "'\n" + kUsage);
    if (value.empty())
      throw Error(name + " needs a non-empty value");
  }
  if (positional.size() != 2)
    throw Error(std::string("expected <lib.so> and <graph-file>, got ") +
                std::to_string(positional.size()) + " arguments\n" + kUsage);
  options.library = positional[0];
  options.graphFile = positional[1];
  return options;
}

// ---- The runtime's graph preprocessing -------------------------------------

void checkRuntime(int status, const std::string &what) {
  if (status != HECTOR_OK)
    throw Error(what + ": " + hector_last_error() + " [" +
                hector_status_name(status) + "]");
}

struct GraphDeleter {
  void operator()(hector_graph *graph) const { hector_graph_free(graph); }
};
using GraphPtr = std::unique_ptr<hector_graph, GraphDeleter>;

GraphPtr buildGraph(const GraphData &data) {
  auto ids = [](const std::vector<int64_t> &v) {
    return hector_index_array{v.data(), int64_t(v.size()), 8, 0};
  };
  hector_graph_input in{ids(data.nodeType), ids(data.src), ids(data.dst),
                        ids(data.etype), data.numNodeTypes, data.numEdgeTypes};
  hector_graph *graph = nullptr;
  checkRuntime(hector_graph_build(&in, &graph), "building the graph arrays");
  return GraphPtr(graph);
}

// ---- Arguments --------------------------------------------------------------

// One argument of the call: a host buffer of the manifest's shape.
struct Argument {
  const ArgSpec *spec = nullptr;
  std::vector<int64_t> shape;
  int64_t count = 0;     // elements
  size_t elemBytes = 4;  // every dtype used here is 4 bytes wide
  void *host = nullptr;  // the data (into `storage` or the runtime's graph)
  std::vector<float> storage;
  std::string source;    // for the summary
  size_t bytes() const { return size_t(count) * elemBytes; }
};

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t k = 0; k < shape.size(); ++k)
    text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
}

std::string graphArrayNames() {
  std::string names;
  for (int id = 0; id < HECTOR_GRAPH_NUM_ARRAYS; ++id)
    names += std::string(id ? ", " : "") + hector_graph_array_name(id);
  return names;
}

// Builds every argument of `entry` and checks it against the manifest.
std::vector<Argument> makeArguments(const EntrySpec &entry,
                                    const hector_graph *graph,
                                    const std::map<std::string, int64_t> &symbols,
                                    const Options &options) {
  std::map<std::string, std::string> unused = options.argFiles;
  std::vector<Argument> args;
  for (const ArgSpec &spec : entry.args) {
    Argument arg;
    arg.spec = &spec;
    std::string what = "argument '" + spec.name + "'";
    if (spec.shape.size() > HECTOR_MEMREF_MAX_RANK)
      throw Error(what + " has rank " + std::to_string(spec.shape.size()) +
                  "; this program passes ranks up to " +
                  std::to_string(HECTOR_MEMREF_MAX_RANK));
    // Shape from the symbols and static sizes; element count bounded so that
    // byte sizes cannot overflow.
    for (size_t k = 0; k < spec.shape.size(); ++k)
      arg.shape.push_back(resolveDim(spec, k, symbols));
    arg.count = 1;
    for (int64_t size : arg.shape) {
      if (size > 0 && arg.count > (int64_t(1) << 40) / size)
        throw Error(what + " would have shape " + shapeText(arg.shape) +
                    ": too large (more than 2^40 elements)");
      arg.count *= size;
    }

    if (spec.role == "graph") {
      // One of the runtime's arrays, by its table name (docs/compilation.md).
      int id = 0;
      if (hector_graph_array_id_of(spec.name.c_str(), &id) != HECTOR_OK)
        throw Error(what + " has role graph, but the runtime builds no array "
                           "of that name (it builds " + graphArrayNames() + ")");
      const void *data = nullptr;
      int64_t length = 0;
      int32_t dtype = 0;
      checkRuntime(hector_graph_array(graph, id, &data, &length, &dtype),
                   "reading graph array " + spec.name);
      std::string built = dtype == HECTOR_GRAPH_FLOAT32 ? "float32" : "int32";
      if (spec.dtype != built)
        throw Error(what + " has dtype " + spec.dtype +
                    " in the manifest, but the runtime builds it as " + built);
      if (spec.shape.size() != 1 || length != arg.count)
        throw Error(what + " must have shape " + spec.shapeText() + " = " +
                    shapeText(arg.shape) + ", but the runtime built " +
                    std::to_string(length) + " elements");
      // Generated code only reads graph arrays.
      arg.host = const_cast<void *>(data);
      arg.source = "graph array";
    } else {
      if (spec.dtype != "float32")
        throw Error(what + " has dtype " + spec.dtype +
                    "; this program makes float32 inputs, weights and "
                    "outputs only");
      auto file = unused.find(spec.name);
      if (file != unused.end()) {
        if (spec.role == "output")
          throw Error("--arg " + spec.name + ": '" + spec.name +
                      "' is an output; only inputs and weights can be read");
        arg.storage = readNpyFloat32(file->second, arg.shape, what);
        arg.source = file->second;
        unused.erase(file);
      } else {
        arg.storage.assign(size_t(arg.count), 0.0f);
        if (spec.role == "output") {
          arg.source = "output (zeroed)";
        } else {
          // Weights of width d get [-1/sqrt(d), 1/sqrt(d)) so that layers
          // stay well scaled; inputs get [-1, 1).
          double scale = 1.0;
          if (spec.role == "weight" && !arg.shape.empty() && arg.shape.back() > 0)
            scale = 1.0 / std::sqrt(double(arg.shape.back()));
          fillSeeded(arg.storage.data(), arg.count, options.seed, spec.index,
                     scale);
          arg.source = "seed " + std::to_string(options.seed);
        }
      }
      arg.host = arg.storage.empty() ? nullptr : arg.storage.data();
    }
    args.push_back(std::move(arg));
  }
  if (!unused.empty()) {
    std::string names;
    for (const ArgSpec &spec : entry.args)
      if (spec.role == "input" || spec.role == "weight")
        names += (names.empty() ? "" : ", ") + spec.name;
    throw Error("--arg " + unused.begin()->first + ": entry '" + entry.name +
                "' has no input or weight of that name (it has " +
                (names.empty() ? "none" : names) + ")");
  }
  return args;
}

// ---- Calling the entry point ------------------------------------------------

// The entry takes one pointer per argument; the count is known only at run
// time, so calls go through a table of fixed-arity trampolines.
using Caller = void (*)(void *fn, void *const *args);
constexpr size_t kMaxArgs = 64;

template <size_t... I>
void callWith(void *fn, void *const *args, std::index_sequence<I...>) {
  using Fn = void (*)(std::conditional_t<true, void *, std::integral_constant<size_t, I>>...);
  reinterpret_cast<Fn>(fn)(args[I]...);
}
template <size_t N> void callN(void *fn, void *const *args) {
  callWith(fn, args, std::make_index_sequence<N>{});
}
template <size_t... N>
constexpr std::array<Caller, sizeof...(N)> makeCallers(std::index_sequence<N...>) {
  return {&callN<N>...};
}
constexpr auto kCallers = makeCallers(std::make_index_sequence<kMaxArgs + 1>{});

void callEntry(void *fn, std::vector<hector_memref> &descriptors) {
  std::vector<void *> pointers;
  for (hector_memref &d : descriptors)
    pointers.push_back(&d);
  kCallers[pointers.size()](fn, pointers.data());
}

std::vector<hector_memref> describe(const std::vector<Argument> &args,
                                    const std::vector<void *> &data) {
  std::vector<hector_memref> descriptors(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (hector_memref_init(&descriptors[i], data[i], int(args[i].shape.size()),
                           args[i].shape.data()) != 0)
      throw Error("argument '" + args[i].spec->name + "': bad descriptor");
  return descriptors;
}

template <typename T> T symbolOf(void *library, const char *name) {
  void *p = dlsym(library, name);
  if (!p)
    throw Error(std::string("the CUDA library's runtime has no ") + name +
                " (an older libhector_runtime.so?)");
  return reinterpret_cast<T>(p);
}

// The caller's side of the launch runtime (hector/launch.h) and the mgpu*
// memory functions it exports for generated code, resolved through the
// library's handle: the copy of libhector_runtime.so the library is bound to.
struct CudaApi {
  explicit CudaApi(void *lib)
      : setDevice(symbolOf<int (*)(int)>(lib, "hector_set_device")),
        status(symbolOf<int (*)()>(lib, "hector_launch_status")),
        error(symbolOf<const char *(*)()>(lib, "hector_launch_error")),
        clear(symbolOf<void (*)()>(lib, "hector_launch_clear")),
        lastError(symbolOf<const char *(*)()>(lib, "hector_last_error")),
        streamCreate(symbolOf<void *(*)()>(lib, "mgpuStreamCreate")),
        streamSynchronize(symbolOf<void (*)(void *)>(lib, "mgpuStreamSynchronize")),
        streamDestroy(symbolOf<void (*)(void *)>(lib, "mgpuStreamDestroy")),
        memAlloc(symbolOf<void *(*)(uint64_t, void *, bool)>(lib, "mgpuMemAlloc")),
        memFree(symbolOf<void (*)(void *, void *)>(lib, "mgpuMemFree")),
        memcpy(symbolOf<void (*)(void *, void *, size_t, void *)>(lib, "mgpuMemcpy")) {}

  // Throws if a launch-runtime call since the last clear() failed.
  void check(const std::string &what) const {
    if (status() != HECTOR_OK)
      throw Error(what + ": " + error() + " [" + hector_status_name(status()) + "]");
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
};

// Device copies of the arguments, freed (even after a failure) on scope exit.
struct DeviceBuffers {
  explicit DeviceBuffers(const CudaApi &cuda) : cuda(cuda) {}
  ~DeviceBuffers() {
    for (void *p : pointers)
      cuda.memFree(p, stream);
    if (stream)
      cuda.streamDestroy(stream);
  }
  const CudaApi &cuda;
  void *stream = nullptr;
  std::vector<void *> pointers;
};

void runCuda(void *lib, void *fn, const std::string &entry,
             std::vector<Argument> &args) {
  CudaApi cuda(lib);
  if (cuda.setDevice(0) != HECTOR_OK)
    throw Error(std::string("the library was built with --target=cuda, but "
                            "GPU 0 cannot be used: ") +
                cuda.lastError());
  cuda.clear();
  DeviceBuffers device(cuda);
  device.stream = cuda.streamCreate();
  cuda.check("creating a CUDA stream");
  // Every argument (outputs too, zeroed) is copied to device memory.
  for (Argument &arg : args) {
    void *p = arg.bytes() ? cuda.memAlloc(arg.bytes(), device.stream, false) : nullptr;
    cuda.check("allocating " + std::to_string(arg.bytes()) + " bytes for '" +
               arg.spec->name + "'");
    device.pointers.push_back(p);
    cuda.memcpy(p, arg.host, arg.bytes(), device.stream);
  }
  cuda.streamSynchronize(device.stream);
  cuda.check("copying the arguments to the GPU");

  std::vector<hector_memref> descriptors = describe(args, device.pointers);
  cuda.clear();
  callEntry(fn, descriptors); // waits for its own stream at the end
  cuda.check("running entry '" + entry + "'");

  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].spec->role == "output")
      cuda.memcpy(args[i].host, device.pointers[i], args[i].bytes(), device.stream);
  cuda.streamSynchronize(device.stream);
  cuda.check("copying the outputs back");
}

// ---- Output -------------------------------------------------------------------

void printOutput(const Argument &arg) {
  const float *v = static_cast<const float *>(arg.host);
  double sum = 0, absSum = 0;
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < arg.count; ++i) {
    if (!std::isfinite(v[i]))
      ++nonFinite;
    sum += v[i];
    absSum += std::fabs(v[i]);
  }
  std::printf("output %s: float32 %s\n", arg.spec->name.c_str(),
              shapeText(arg.shape).c_str());
  std::printf("  checksum: sum = %.9g, sum|x| = %.9g, non-finite = %lld\n", sum,
              absSum, static_cast<long long>(nonFinite));
  // Rows are the leading dimension; a rank-0 or rank-1 output is one row.
  int64_t rows = arg.shape.size() >= 2 ? arg.shape[0] : 1;
  int64_t width = rows ? arg.count / rows : 0;
  for (int64_t r = 0; r < std::min<int64_t>(rows, 3); ++r) {
    std::printf("  row %lld:", static_cast<long long>(r));
    for (int64_t c = 0; c < std::min<int64_t>(width, 8); ++c)
      std::printf(" %.6g", v[r * width + c]);
    std::printf("%s\n", width > 8 ? " ..." : "");
  }
  if (rows > 3)
    std::printf("  ... (%lld rows)\n", static_cast<long long>(rows));
}

void writeOutputs(const std::string &path, const std::vector<Argument> &args) {
  std::ofstream out(path, std::ios::binary);
  for (const Argument &arg : args)
    if (arg.spec->role == "output" && arg.count)
      out.write(static_cast<const char *>(arg.host), std::streamsize(arg.bytes()));
  out.close();
  if (!out)
    throw Error(path + ": cannot write the output file");
}

struct LibraryCloser {
  void operator()(void *handle) const { dlclose(handle); }
};

int run(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  Manifest manifest = readManifest(options.library + ".json");
  const EntrySpec &entry = manifest.entry(options.entry);
  if (entry.args.size() > kMaxArgs)
    throw Error("entry '" + entry.name + "' has " +
                std::to_string(entry.args.size()) +
                " arguments; this program passes at most " +
                std::to_string(kMaxArgs));

  // A path without '/' would make dlopen search the system directories.
  std::string path = options.library.find('/') == std::string::npos
                         ? "./" + options.library
                         : options.library;
  std::unique_ptr<void, LibraryCloser> lib(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib)
    throw Error(std::string("cannot load the library: ") + dlerror());
  void *fn = dlsym(lib.get(), entry.symbol.c_str());
  if (!fn)
    throw Error(options.library + " has no symbol " + entry.symbol +
                " (entry '" + entry.name + "' of its manifest)");

  GraphPtr graph = buildGraph(readGraphFile(options.graphFile));
  hector_graph_sizes sizes{};
  checkRuntime(hector_graph_get_sizes(graph.get(), &sizes), "reading the graph sizes");
  std::map<std::string, int64_t> symbols = {
      {"N", sizes.num_nodes},      {"E", sizes.num_edges},
      {"T", sizes.num_node_types}, {"R", sizes.num_edge_types},
      {"P", sizes.num_pairs}};
  std::vector<Argument> args = makeArguments(entry, graph.get(), symbols, options);

  std::printf("library: %s (%s), entry %s\n", options.library.c_str(),
              manifest.target.c_str(), entry.name.c_str());
  std::printf("graph: %s: N = %lld, E = %lld, T = %lld, R = %lld, P = %lld\n",
              options.graphFile.c_str(), static_cast<long long>(sizes.num_nodes),
              static_cast<long long>(sizes.num_edges),
              static_cast<long long>(sizes.num_node_types),
              static_cast<long long>(sizes.num_edge_types),
              static_cast<long long>(sizes.num_pairs));
  for (const Argument &arg : args)
    std::printf("  %-6s %-14s %-7s %-14s %s\n", arg.spec->role.c_str(),
                arg.spec->name.c_str(), arg.spec->dtype.c_str(),
                shapeText(arg.shape).c_str(), arg.source.c_str());

  if (manifest.target == "cuda") {
    runCuda(lib.get(), fn, entry.name, args);
  } else {
    std::vector<void *> data;
    for (const Argument &arg : args)
      data.push_back(arg.host);
    std::vector<hector_memref> descriptors = describe(args, data);
    callEntry(fn, descriptors);
  }

  for (const Argument &arg : args)
    if (arg.spec->role == "output")
      printOutput(arg);
  if (!options.out.empty()) {
    writeOutputs(options.out, args);
    std::printf("wrote %s\n", options.out.c_str());
  }
  return 0;
}

} // namespace
} // namespace example

int main(int argc, char **argv) {
  try {
    return example::run(argc, argv);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "run_forward: error: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "run_forward: error: %s\n", e.what());
  }
  return 1;
}
