// run_forward: runs one entry point of a library built by hectorc on a graph
// read from a text file, with seeded (or .npy) inputs and weights, and prints
// the output. See README.md.
//
//   run_forward <lib.so> <graph-file> [--entry NAME] [--seed S] [--out FILE]
//               [--arg NAME=FILE.npy]...
//
// Steps: read <lib.so>.json; dlopen the library; read the graph and build its
// preprocessing arrays with libhector_runtime; make every argument with the
// manifest's shape (symbols N, E, T, R, P from the graph); call
// _mlir_ciface_<entry> with memref descriptors (entry_call.h); print each
// output's shape, checksum and first rows. Every error is one message on
// stderr and exit status 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "command_line.h"
#include "entry_call.h"

namespace example {
namespace {

const char *kUsage =
    "usage: run_forward <lib.so> <graph-file> [--entry NAME] [--seed S]\n"
    "                   [--out FILE] [--arg NAME=FILE.npy]...\n"
    "  <lib.so>      a library from `hectorc model.mlir --target=cpu|cuda -o "
    "lib.so`\n"
    "                (its manifest <lib.so>.json must be beside it)\n"
    "  <graph-file>  header 'N E T R', N node types, E lines 'src dst etype'\n"
    "                ('#' starts a comment; see examples/cpp/README.md)\n"
    "  --entry NAME  the entry point to run (default: the only model "
    "function)\n"
    "  --seed S      seed of the generated inputs and weights (default 0)\n"
    "  --out FILE    write the outputs as raw little-endian float32, in "
    "manifest order\n"
    "  --arg NAME=FILE.npy  take input or weight NAME from a float32 .npy "
    "file\n";

struct Options : CommonOptions {
  std::string out;
};

Options parseOptions(int argc, char **argv) {
  Options options;
  for (const auto &[name, value] :
       parseCommandLine(argc, argv, {"--out"}, kUsage, options))
    if (name == "--out")
      options.out = value;
  return options;
}

void printOutput(const Tensor &tensor) {
  const float *v = static_cast<const float *>(tensor.host);
  double sum = 0, absSum = 0;
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < tensor.count; ++i) {
    if (!std::isfinite(v[i]))
      ++nonFinite;
    sum += v[i];
    absSum += std::fabs(v[i]);
  }
  std::printf("output %s: float32 %s\n", tensor.name.c_str(),
              shapeText(tensor.shape).c_str());
  std::printf("  checksum: sum = %.9g, sum|x| = %.9g, non-finite = %lld\n", sum,
              absSum, static_cast<long long>(nonFinite));
  // Rows are the leading dimension; a rank-0 or rank-1 output is one row.
  int64_t rows = tensor.shape.size() >= 2 ? tensor.shape[0] : 1;
  int64_t width = rows ? tensor.count / rows : 0;
  for (int64_t r = 0; r < std::min<int64_t>(rows, 3); ++r) {
    std::printf("  row %lld:", static_cast<long long>(r));
    for (int64_t c = 0; c < std::min<int64_t>(width, 8); ++c)
      std::printf(" %.6g", v[r * width + c]);
    std::printf("%s\n", width > 8 ? " ..." : "");
  }
  if (rows > 3)
    std::printf("  ... (%lld rows)\n", static_cast<long long>(rows));
}

int run(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  Library library(options.library);
  const EntrySpec &entry = library.manifest().entry(options.entry);
  library.function(entry); // a missing symbol is an error before any work
  Graph graph(options.graphFile);
  std::vector<Tensor> args =
      makeArguments(entry, graph, options.seed, options.argFiles);

  std::printf("library: %s (%s), entry %s\n", options.library.c_str(),
              library.manifest().target.c_str(), entry.name.c_str());
  std::printf("graph: %s: %s\n", options.graphFile.c_str(),
              graph.sizesText().c_str());
  for (size_t i = 0; i < args.size(); ++i)
    std::printf("%s\n", argumentLine(entry.args[i], args[i]).c_str());

  Runner runner(library, graph);
  std::vector<Tensor *> pointers;
  for (Tensor &tensor : args)
    pointers.push_back(&tensor);
  runner.call(entry, pointers);

  std::vector<const Tensor *> outputs;
  for (size_t i = 0; i < args.size(); ++i)
    if (entry.args[i].output) {
      runner.fetch(args[i]);
      printOutput(args[i]);
      outputs.push_back(&args[i]);
    }
  if (!options.out.empty()) {
    std::ofstream out(options.out, std::ios::binary);
    for (const Tensor *tensor : outputs)
      out.write(static_cast<const char *>(tensor->host),
                std::streamsize(tensor->bytes()));
    out.close();
    if (!out)
      throw Error(options.out + ": cannot write the output file");
    std::printf("wrote %s\n", options.out.c_str());
  }
  return 0;
}

} // namespace
} // namespace example

int main(int argc, char **argv) {
  return example::runProgram("run_forward", example::run, argc, argv);
}
