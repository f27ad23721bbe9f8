#include "manifest.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <fstream>

#include <nlohmann/json.hpp>

namespace example {
namespace {

using nlohmann::json;

constexpr const char *kFormat = "hector-library-manifest";
constexpr int kFormatVersion = 1;
// Sizes above this are surely not a real buffer; keeps products in range.
constexpr int64_t kMaxSize = int64_t(1) << 40;

// The entry kinds and argument roles of hector/entry_abi.def: per role,
// what an entry of each kind (in kKinds' order) does with the argument.
enum class Access { NONE, READ, WRITTEN };
constexpr const char *kKinds[] = {
#define HECTOR_ENTRY_KIND(ID, name) #name,
#include "hector/entry_abi.def"
#undef HECTOR_ENTRY_KIND
};
struct Role {
  const char *name;
  Access access[std::size(kKinds)];
};
constexpr Role kRoles[] = {
#define HECTOR_ARG_ROLE(ID, name, inference, forward, backward)                \
  {#name, {Access::inference, Access::forward, Access::backward}},
#include "hector/entry_abi.def"
#undef HECTOR_ARG_ROLE
};

// What an entry of `kind` does with an argument of `role`; null when either
// is unknown.
const Access *accessOf(const std::string &role, const std::string &kind) {
  for (const Role &r : kRoles)
    if (role == r.name)
      for (size_t k = 0; k < std::size(kKinds); ++k)
        if (kind == kKinds[k])
          return &r.access[k];
  return nullptr;
}

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ManifestError(path + ": not a valid hectorc manifest: " + what);
}

const json &field(const std::string &path, const json &object, const char *key,
                  const std::string &where) {
  auto it = object.find(key);
  if (it == object.end())
    fail(path, where + " lacks \"" + key + "\"");
  return *it;
}

std::string stringField(const std::string &path, const json &object,
                        const char *key, const std::string &where) {
  const json &value = field(path, object, key, where);
  if (!value.is_string())
    fail(path, where + ": \"" + key + "\" is not a string");
  return value.get<std::string>();
}

// "N", "R+1": an identifier, optionally '+' and a decimal constant.
bool parseSymbol(const std::string &text, std::string &symbol, int64_t &plus) {
  size_t k = 0;
  if (text.empty() ||
      !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
    return false;
  while (k < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_'))
    ++k;
  symbol = text.substr(0, k);
  plus = 0;
  if (k == text.size())
    return true;
  if (text[k] != '+' || k + 1 == text.size() || text.size() - k > 10)
    return false;
  for (size_t j = k + 1; j < text.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(text[j])))
      return false;
    plus = plus * 10 + (text[j] - '0');
  }
  return true;
}

std::optional<int64_t> sizeValue(const std::string &path, const json &value,
                                 const std::string &where) {
  if (value.is_null())
    return std::nullopt;
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() > kMaxSize)
    fail(path, where + ": bad size " + value.dump());
  return value.get<int64_t>();
}

ArgSpec parseArgument(const std::string &path, const json &raw, int index,
                      const std::string &entry, const std::string &kind) {
  std::string where =
      "entry '" + entry + "' argument " + std::to_string(index);
  if (!raw.is_object())
    fail(path, where + " is not an object");
  ArgSpec arg;
  arg.index = index;
  arg.role = stringField(path, raw, "role", where);
  arg.name = stringField(path, raw, "name", where);
  arg.dtype = stringField(path, raw, "dtype", where);
  const Access *access = accessOf(arg.role, kind);
  if (!access)
    fail(path, where + " has role '" + arg.role + "'");
  // Which roles each kind of entry may have (docs/compilation.md).
  if (*access == Access::NONE)
    fail(path, where + " has role '" + arg.role + "' in an entry of kind " +
                   kind);
  arg.output = *access == Access::WRITTEN;
  if (arg.name.empty())
    fail(path, where + " has no name");
  const json &rank = field(path, raw, "rank", where);
  const json &shape = field(path, raw, "shape", where);
  if (!rank.is_number_integer() || rank.get<int64_t>() < 0 ||
      rank.get<int64_t>() > 64 || !shape.is_array() ||
      shape.size() != rank.get<uint64_t>())
    fail(path, where + " has rank " + rank.dump() + " and shape " + shape.dump());
  for (const json &d : shape) {
    Dim dim;
    if (d.is_string()) {
      if (!parseSymbol(d.get<std::string>(), dim.symbol, dim.plus))
        fail(path, where + " has a bad shape entry " + d.dump());
    } else {
      dim.size = sizeValue(path, d, where);
    }
    arg.shape.push_back(dim);
  }
  auto sizes = raw.find("sizes");
  if (sizes == raw.end() || sizes->is_null()) {
    arg.sizes.assign(arg.shape.size(), std::nullopt);
  } else {
    if (!sizes->is_array() || sizes->size() != arg.shape.size())
      fail(path, where + " has sizes " + sizes->dump() + " for rank " +
                     std::to_string(arg.shape.size()));
    for (const json &s : *sizes)
      arg.sizes.push_back(sizeValue(path, s, where));
  }
  return arg;
}

} // namespace

std::string Dim::text() const {
  if (!symbol.empty())
    return plus ? symbol + "+" + std::to_string(plus) : symbol;
  return size ? std::to_string(*size) : "?";
}

std::string ArgSpec::shapeText() const {
  std::string text = "[";
  for (size_t k = 0; k < shape.size(); ++k)
    text += (k ? ", " : "") + shape[k].text();
  return text + "]";
}

const EntrySpec &Manifest::entry(const std::string &name) const {
  std::string names;
  std::vector<const EntrySpec *> functions; // the inference entries
  for (const EntrySpec &e : entries) {
    names += (names.empty() ? "" : ", ") + e.name;
    if (e.kind == "inference")
      functions.push_back(&e);
  }
  if (name.empty()) {
    if (functions.size() == 1)
      return *functions.front();
    std::string choices;
    for (const EntrySpec *e : functions)
      choices += (choices.empty() ? "" : ", ") + e->name;
    throw ManifestError(path + ": the library has " +
                        std::to_string(functions.size()) +
                        " entry points (" + (choices.empty() ? "none" : choices) +
                        "); choose one with --entry NAME");
  }
  for (const EntrySpec &e : entries)
    if (e.name == name)
      return e;
  throw ManifestError(path + ": no entry point named '" + name +
                      "' (entries: " + (names.empty() ? "none" : names) + ")");
}

Manifest::Training Manifest::training(const std::string &primal) const {
  Training found{nullptr, nullptr};
  for (const EntrySpec &e : entries) {
    if (e.primal != primal)
      continue;
    if (e.kind == "training_forward")
      found.forward = &e;
    else if (e.kind == "training_backward")
      found.backward = &e;
  }
  if (!found.forward && !found.backward)
    throw ManifestError(path + ": function '" + primal +
                        "' has no training entry points ('" + primal +
                        "_fwd', '" + primal +
                        "_bwd'): the library was built without --training; "
                        "rebuild it with `hectorc --training`");
  if (!found.forward || !found.backward)
    throw ManifestError(path + ": function '" + primal + "' has a " +
                        (found.forward ? "training_forward" : "training_backward") +
                        " entry but no " +
                        (found.forward ? "training_backward" : "training_forward") +
                        " entry");
  return found;
}

Manifest readManifest(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw ManifestError(path + ": cannot open the manifest; hectorc writes it "
                               "next to the library (--emit=lib)");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception &e) {
    fail(path, e.what());
  }
  if (!root.is_object() || root.value("format", json()) != kFormat)
    fail(path, std::string("format is not '") + kFormat + "'");
  if (root.value("format_version", json()) != kFormatVersion)
    fail(path, "format_version " + root.value("format_version", json()).dump() +
                   ", this program reads " + std::to_string(kFormatVersion));

  Manifest manifest;
  manifest.path = path;
  manifest.target = stringField(path, root, "target", "the manifest");
  if (manifest.target != "cpu" && manifest.target != "cuda")
    fail(path, "target '" + manifest.target + "'");
  const json &entries = field(path, root, "entries", "the manifest");
  if (!entries.is_array())
    fail(path, "\"entries\" is not a list");
  for (const json &raw : entries) {
    if (!raw.is_object())
      fail(path, "an entry is not an object");
    EntrySpec entry;
    entry.name = stringField(path, raw, "name", "an entry");
    std::string where = "entry '" + entry.name + "'";
    entry.symbol = stringField(path, raw, "symbol", where);
    // Manifests from before training entries carry no kind: inference.
    entry.kind = raw.contains("kind") ? stringField(path, raw, "kind", where)
                                      : "inference";
    if (std::none_of(std::begin(kKinds), std::end(kKinds),
                     [&](const char *kind) { return entry.kind == kind; }))
      fail(path, where + " has kind '" + entry.kind + "'");
    entry.primal = raw.contains("primal")
                       ? stringField(path, raw, "primal", where)
                       : entry.name;
    if (entry.primal.empty())
      fail(path, where + " has an empty \"primal\"");
    const json &args = field(path, raw, "arguments", where);
    if (!args.is_array())
      fail(path, where + ": \"arguments\" is not a list");
    for (const json &a : args)
      entry.args.push_back(parseArgument(path, a, int(entry.args.size()),
                                         entry.name, entry.kind));
    manifest.entries.push_back(std::move(entry));
  }
  return manifest;
}

int64_t resolveDim(const ArgSpec &arg, size_t k,
                   const std::map<std::string, int64_t> &symbols) {
  const Dim &dim = arg.shape[k];
  std::string where = "argument '" + arg.name + "' (shape " + arg.shapeText() +
                      "), dimension " + std::to_string(k);
  std::optional<int64_t> value = dim.size ? dim.size : arg.sizes[k];
  if (!dim.symbol.empty()) {
    auto it = symbols.find(dim.symbol);
    if (it == symbols.end()) {
      std::string known;
      for (const auto &[name, _] : symbols)
        known += (known.empty() ? "" : ", ") + name;
      throw ManifestError(where + ": unknown size symbol '" + dim.symbol +
                          "' (this program knows " + known + ")");
    }
    value = it->second + dim.plus;
  }
  if (!value)
    throw ManifestError(where + ": the manifest gives no size, and this "
                                "program cannot choose one");
  if (arg.sizes[k] && *arg.sizes[k] != *value)
    throw ManifestError(where + " is " + dim.text() + " = " +
                        std::to_string(*value) +
                        ", but the library requires size " +
                        std::to_string(*arg.sizes[k]));
  return *value;
}

} // namespace example
