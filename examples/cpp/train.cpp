// train_step: trains the weights of a model compiled with `hectorc
// --training` on a graph read from a text file, for K steps of
//   f_fwd -> softmax cross-entropy loss and its gradient (here, in C++)
//         -> f_bwd -> SGD or Adam update of every weight,
// printing the loss of every step. See README.md.
//
//   train_step <lib.so> <graph-file> [--entry F] [--steps K] [--lr X]
//              [--optimizer sgd|adam] [--seed S] [--arg NAME=FILE.npy]...
//              [--dump-weights DIR]
//
// Every error is one message on stderr and exit status 1.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "command_line.h"
#include "entry_call.h"
#include "values.h"

namespace example {
namespace {

const char *kUsage =
    "usage: train_step <lib.so> <graph-file> [--entry F] [--steps K] [--lr X]\n"
    "                  [--optimizer sgd|adam] [--seed S] "
    "[--arg NAME=FILE.npy]...\n"
    "                  [--dump-weights DIR]\n"
    "  <lib.so>      a library from `hectorc model.mlir --training "
    "--target=cpu|cuda -o lib.so`\n"
    "                (its manifest <lib.so>.json must be beside it)\n"
    "  <graph-file>  header 'N E T R', N node types, E lines 'src dst etype'\n"
    "                ('#' starts a comment; see examples/cpp/README.md)\n"
    "  --entry F     the model function to train (default: the only one);\n"
    "                its entries F_fwd and F_bwd are called\n"
    "  --steps K     training steps (default 10)\n"
    "  --lr X        learning rate (default 0.1 for sgd, 0.01 for adam)\n"
    "  --optimizer sgd|adam   (default sgd)\n"
    "  --seed S      seed of the generated inputs, weights and labels "
    "(default 0)\n"
    "  --arg NAME=FILE.npy  take input or weight NAME from a float32 .npy "
    "file\n"
    "  --dump-weights DIR   write every weight after the last step as "
    "DIR/<name>.npy\n";

struct Options : CommonOptions {
  std::string optimizer = "sgd", dumpWeights;
  uint64_t steps = 10;
  double lr = 0; // 0: the optimizer's default
};

Options parseOptions(int argc, char **argv) {
  Options options;
  for (const auto &[name, value] : parseCommandLine(
           argc, argv, {"--steps", "--lr", "--optimizer", "--dump-weights"},
           kUsage, options)) {
    if (name == "--steps")
      options.steps = parseUnsigned(name, value);
    else if (name == "--lr")
      options.lr = parsePositive(name, value);
    else if (name == "--optimizer")
      options.optimizer = value;
    else
      options.dumpWeights = value;
  }
  if (options.optimizer != "sgd" && options.optimizer != "adam")
    throw Error("--optimizer must be sgd or adam, got '" + options.optimizer +
                "'");
  if (options.steps > 1000000)
    throw Error("--steps " + std::to_string(options.steps) +
                " is more than this example runs (1000000)");
  if (options.lr == 0)
    options.lr = options.optimizer == "sgd" ? 0.1 : 0.01;
  return options;
}

// The tensors of all three entries, by argument name: f_fwd's arguments,
// then what f_bwd adds (cotangents and gradients). An entry's arguments
// are bound by name, so f_bwd reads the very buffers f_fwd wrote.
class Workspace {
public:
  Tensor &add(Tensor tensor) {
    std::string name = tensor.name;
    return tensors_.emplace(name, std::move(tensor)).first->second;
  }
  Tensor *find(const std::string &name) {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  std::vector<Tensor *> bind(const EntrySpec &entry) {
    std::vector<Tensor *> args;
    for (const ArgSpec &spec : entry.args) {
      Tensor *tensor = find(spec.name);
      if (!tensor)
        throw Error("entry '" + entry.name + "' takes argument '" + spec.name +
                    "' (role " + spec.role + "), which no other entry has");
      args.push_back(tensor);
    }
    return args;
  }

private:
  std::map<std::string, Tensor> tensors_;
};

// Softmax cross-entropy of logits y [N, C] against labels, averaged over the
// N nodes, and its gradient (in double, stored as float32):
//   L = (1/N) sum_v ( log sum_c exp(y_vc) - y_v,label(v) )
//   dL/dy_vc = ( softmax(y_v)_c - [c == label(v)] ) / N
// This is torch's nll_loss(log_softmax(y), labels), mean reduction.
double crossEntropy(const Tensor &logits, const std::vector<int64_t> &labels,
                    Tensor &grad) {
  int64_t n = logits.shape[0], c = logits.shape[1];
  double total = 0;
  std::vector<double> p(static_cast<size_t>(c));
  for (int64_t v = 0; v < n; ++v) {
    const float *y = logits.values() + v * c;
    double peak = y[0];
    for (int64_t k = 1; k < c; ++k)
      peak = std::fmax(peak, double(y[k]));
    double sum = 0;
    for (int64_t k = 0; k < c; ++k)
      sum += p[size_t(k)] = std::exp(double(y[k]) - peak);
    int64_t label = labels[size_t(v)];
    total += std::log(sum) + peak - double(y[label]);
    float *g = grad.values() + v * c;
    for (int64_t k = 0; k < c; ++k)
      g[k] = float((p[size_t(k)] / sum - (k == label ? 1.0 : 0.0)) / double(n));
  }
  grad.hostChanged();
  return total / double(n);
}

// One weight and its optimizer state.
struct Parameter {
  Tensor *weight;
  Tensor *grad;
  std::vector<double> m, v; // Adam's moment estimates
};

// SGD:  w -= lr * g.
// Adam (beta1 0.9, beta2 0.999, eps 1e-8; t = the step, from 1):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
void update(Parameter &p, const Options &options, uint64_t step) {
  float *w = p.weight->values();
  const float *g = p.grad->values();
  int64_t count = p.weight->count;
  if (options.optimizer == "sgd") {
    for (int64_t i = 0; i < count; ++i)
      w[i] = float(double(w[i]) - options.lr * double(g[i]));
  } else {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    p.m.resize(size_t(count));
    p.v.resize(size_t(count));
    double c1 = 1 - std::pow(b1, double(step)),
           c2 = 1 - std::pow(b2, double(step));
    for (int64_t i = 0; i < count; ++i) {
      double &m = p.m[size_t(i)], &v = p.v[size_t(i)];
      m = b1 * m + (1 - b1) * g[i];
      v = b2 * v + (1 - b2) * double(g[i]) * g[i];
      w[i] = float(double(w[i]) -
                   options.lr * (m / c1) / (std::sqrt(v / c2) + eps));
    }
  }
  p.weight->hostChanged();
}

int run(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  Library library(options.library);
  const Manifest &manifest = library.manifest();
  const EntrySpec &f = manifest.entry(options.entry);
  if (f.kind != "inference")
    throw Error("--entry " + f.name + " is the " + f.kind +
                " entry of function '" + f.primal + "'; give --entry " +
                f.primal);
  Manifest::Training training = manifest.training(f.name);
  const EntrySpec &fwd = *training.forward, &bwd = *training.backward;
  for (const EntrySpec *entry : {&f, &fwd, &bwd})
    library.function(*entry); // a missing symbol is an error before any work
  Graph graph(options.graphFile);

  // f_fwd takes f's arguments at the same positions, so the seeded inputs
  // and weights are those run_forward makes for f with the same seed.
  Workspace ws;
  std::vector<Tensor> made =
      makeArguments(fwd, graph, options.seed, options.argFiles);
  for (Tensor &tensor : made)
    ws.add(std::move(tensor));
  for (const ArgSpec &spec : bwd.args) {
    if (ws.find(spec.name))
      continue;
    // The backward may need graph arrays the forward does not (e.g. to
    // aggregate towards sources).
    if (spec.role != "graph" && spec.role != "grad_output" &&
        spec.role != "grad")
      throw Error("entry '" + bwd.name + "' reads '" + spec.name + "' (role " +
                  spec.role + "), which '" + fwd.name +
                  "' neither takes nor produces");
    Tensor &tensor = ws.add(makeTensor(spec, graph));
    if (spec.role == "grad_output")
      tensor.source = "zeros"; // replaced by the loss gradient for d_result0
  }

  // Every argument of f and f_bwd is there with its shape before any call.
  for (const EntrySpec *entry : {&f, &bwd}) {
    std::vector<Tensor *> args = ws.bind(*entry);
    for (size_t i = 0; i < args.size(); ++i)
      checkArgument(*entry, entry->args[i], *args[i], graph);
  }

  // The loss is on f's first result; the other results get zero cotangents.
  std::vector<const ArgSpec *> results;
  for (const ArgSpec &spec : f.args)
    if (spec.role == "output")
      results.push_back(&spec);
  if (results.empty())
    throw Error("function '" + f.name + "' has no result to train on");
  Tensor *logits = ws.find(results[0]->name);
  Tensor *dLogits = ws.find("d_" + results[0]->name);
  if (!logits || !dLogits)
    throw Error("entry '" + bwd.name + "' takes no cotangent 'd_" +
                results[0]->name + "' of result '" + results[0]->name + "'");
  int64_t n = graph.size("N");
  if (logits->shape.size() != 2 || logits->shape[0] != n ||
      logits->shape[1] < 1)
    throw Error("result '" + logits->name + "' is " + shapeText(logits->shape) +
                "; the loss needs one row of class scores per node, [N = " +
                std::to_string(n) + ", classes >= 1]");
  if (n == 0)
    throw Error(graph.file() + ": the graph has no nodes: nothing to train");
  int64_t classes = logits->shape[1];
  std::vector<int64_t> labels = seededLabels(n, options.seed, classes);

  std::vector<Parameter> params;
  std::string weights;
  for (const ArgSpec &spec : f.args) {
    if (spec.role != "weight")
      continue;
    Tensor *grad = ws.find("d_" + spec.name);
    const ArgSpec *gradSpec = nullptr;
    for (const ArgSpec &b : bwd.args)
      if (b.name == "d_" + spec.name && b.role == "grad")
        gradSpec = &b;
    if (!gradSpec)
      throw Error("entry '" + bwd.name + "' computes no gradient 'd_" +
                  spec.name + "' of weight '" + spec.name + "'");
    params.push_back({ws.find(spec.name), grad, {}, {}});
    weights += (weights.empty() ? "" : ", ") + spec.name + " " +
               shapeText(ws.find(spec.name)->shape);
  }
  if (params.empty())
    throw Error("function '" + f.name + "' has no weights to train");

  dLogits->source = "loss gradient";
  for (const EntrySpec *entry : {&fwd, &bwd})
    for (const ArgSpec &spec : entry->args)
      if (spec.output)
        ws.find(spec.name)->source = "written by " + entry->name;

  std::printf("library: %s (%s), function %s, entries %s, %s\n",
              options.library.c_str(), manifest.target.c_str(), f.name.c_str(),
              fwd.name.c_str(), bwd.name.c_str());
  std::printf("graph: %s: %s\n", options.graphFile.c_str(),
              graph.sizesText().c_str());
  for (const EntrySpec *entry : {&fwd, &bwd}) {
    std::printf("arguments of %s:\n", entry->name.c_str());
    for (const ArgSpec &spec : entry->args)
      std::printf("%s\n", argumentLine(spec, *ws.find(spec.name)).c_str());
  }
  std::printf("loss: softmax cross-entropy of %s %s, mean over the nodes, "
              "seeded labels in [0, %lld)\n",
              logits->name.c_str(), shapeText(logits->shape).c_str(),
              static_cast<long long>(classes));
  std::printf("optimizer: %s, lr %g; weights: %s\n", options.optimizer.c_str(),
              options.lr, weights.c_str());

  Runner runner(library, graph);
  auto lossOf = [&](const char *when) {
    runner.fetch(*logits);
    double loss = crossEntropy(*logits, labels, *dLogits);
    if (!std::isfinite(loss))
      throw Error(std::string("the loss ") + when + " is not finite (" +
                  std::to_string(loss) + "): lower --lr?");
    return loss;
  };
  for (uint64_t step = 1; step <= options.steps; ++step) {
    runner.call(fwd, ws.bind(fwd));
    std::string when = "at step " + std::to_string(step);
    double loss = lossOf(when.c_str());
    std::printf("step %llu loss %.9g\n", static_cast<unsigned long long>(step),
                loss);
    std::fflush(stdout);
    runner.call(bwd, ws.bind(bwd));
    for (Parameter &p : params) {
      runner.fetch(*p.grad);
      update(p, options, step);
    }
  }
  // The loss of the trained weights, through the inference entry.
  runner.call(f, ws.bind(f));
  std::printf("final loss %.9g (entry %s, after %llu steps)\n",
              lossOf("after training"), f.name.c_str(),
              static_cast<unsigned long long>(options.steps));

  if (!options.dumpWeights.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.dumpWeights, error);
    if (error)
      throw Error(options.dumpWeights +
                  ": cannot create the directory: " + error.message());
    for (const Parameter &p : params)
      writeNpyFloat32(options.dumpWeights + "/" + p.weight->name + ".npy",
                      p.weight->values(), p.weight->shape);
    std::printf("wrote %s/<name>.npy for the weights %s\n",
                options.dumpWeights.c_str(), weights.c_str());
  }
  return 0;
}

} // namespace
} // namespace example

int main(int argc, char **argv) {
  return example::runProgram("train_step", example::run, argc, argv);
}
