//===- EntryPoints.cpp - entry points and the library manifest -*- C++ -*-===//

#include "hector/Target/EntryPoints.h"

#include "hector/EntryABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/StringExtras.h"

#include <nlohmann/json.hpp>

#include <set>

using namespace mlir;
namespace abi = hector::abi;
using hector::EntryArgument;
using hector::EntryPoint;
using hector::OffloadedValue;
using hector::ShapeDim;

namespace {

constexpr llvm::StringLiteral kEntryAttr = "hector.entry";
constexpr llvm::StringLiteral kArgAttr = "hector.arg";
constexpr llvm::StringLiteral kCInterfaceAttr = "llvm.emit_c_interface";
constexpr llvm::StringLiteral kKindAttr = "hector.kind";
constexpr llvm::StringLiteral kPrimalAttr = "hector.primal";
constexpr llvm::StringLiteral kTypedEndpointsAttr = "hector.typed_endpoints";
constexpr llvm::StringLiteral kOffloadAttr = "hector.offload";

/// The numpy name of a memref element type, or "" when unsupported.
std::string dtypeName(Type type) {
  if (type.isF16())
    return "float16";
  if (type.isF32())
    return "float32";
  if (type.isF64())
    return "float64";
  if (type.isIndex())
    return "int64";
  if (auto integer = dyn_cast<IntegerType>(type)) {
    if (integer.isUnsigned())
      return "";
    switch (integer.getWidth()) {
    case 8:
      return "int8";
    case 16:
      return "int16";
    case 32:
      return "int32";
    case 64:
      return "int64";
    default:
      return "";
    }
  }
  return "";
}

/// True when the function writes through `arg`, directly or through a view.
/// Operations that state no memory effects count as readers.
bool isWritten(Value arg) {
  SmallVector<Value> work = {arg};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == v)
          llvm::append_range(work, user->getResults());
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects)
        continue;
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (const MemoryEffects::EffectInstance &effect : list)
        if (isa<MemoryEffects::Write>(effect.getEffect()) &&
            effect.getValue() == v)
          return true;
    }
  }
  return false;
}

/// "N", "E", "R+1": an identifier, optionally plus a constant.
bool isSymbol(llvm::StringRef text) {
  llvm::StringRef name = text.split('+').first;
  llvm::StringRef plus = text.drop_front(name.size());
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  if (!llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return false;
  if (plus.empty())
    return true;
  llvm::StringRef digits = plus.drop_front();
  return !digits.empty() && llvm::all_of(digits, llvm::isDigit);
}

/// Fills `arg` from a `hector.arg` dictionary, checking it against `type`.
LogicalResult readArgAttr(func::FuncOp func, unsigned index, Attribute attr,
                          MemRefType type, EntryArgument &arg) {
  auto fail = [&]() {
    return func.emitError("argument ")
           << index << ": '" << kArgAttr << "' ";
  };
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return fail() << "must be a dictionary, got " << attr;
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained({"role", "name", "shape", "host_resident"},
                            entry.getName()))
      return fail() << "has an unknown key '" << entry.getName().getValue()
                    << "' (expected role, name, shape, host_resident)";

  if (Attribute role = dict.get("role")) {
    auto text = dyn_cast<StringAttr>(role);
    if (!text || !llvm::is_contained(abi::roleNames(), text.getValue())) {
      InFlightDiagnostic diag = fail() << "role must be one of";
      for (auto [i, name] : llvm::enumerate(abi::roleNames()))
        diag << (i ? ", \"" : " \"") << name << "\"";
      return diag << "; got " << role;
    }
    arg.role = text.getValue().str();
  }
  if (Attribute name = dict.get("name")) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text || text.getValue().empty())
      return fail() << "name must be a non-empty string, got " << name;
    arg.name = text.getValue().str();
  }
  if (Attribute hostResident = dict.get("host_resident")) {
    auto flag = dyn_cast<BoolAttr>(hostResident);
    if (!flag)
      return fail() << "host_resident must be a boolean, got " << hostResident;
    arg.hostResident = flag.getValue();
  }
  if (Attribute shape = dict.get("shape")) {
    auto dims = dyn_cast<ArrayAttr>(shape);
    if (!dims || static_cast<int64_t>(dims.size()) != type.getRank())
      return fail() << "shape must be an array of " << type.getRank()
                    << " entries (the memref's rank), got " << shape;
    for (auto [k, dim] : llvm::enumerate(dims)) {
      ShapeDim &out = arg.shape[k];
      int64_t fixed = type.getDimSize(k);
      if (auto symbol = dyn_cast<StringAttr>(dim)) {
        if (!isSymbol(symbol.getValue()))
          return fail() << "shape entry " << k << " must be a symbol such as "
                        << "\"E\" or \"N+1\", got " << dim;
        out.symbol = symbol.getValue().str();
        // A static memref dimension stays checked by its size.
        out.size = ShapedType::isDynamic(fixed) ? -1 : fixed;
      } else if (auto size = dyn_cast<IntegerAttr>(dim)) {
        if (size.getInt() < 0 ||
            (!ShapedType::isDynamic(fixed) && fixed != size.getInt()))
          return fail() << "shape entry " << k << " is " << size.getInt()
                        << " but the memref dimension is "
                        << (ShapedType::isDynamic(fixed)
                                ? std::string("dynamic")
                                : std::to_string(fixed));
        out.size = size.getInt();
      } else {
        return fail() << "shape entry " << k
                      << " must be a string symbol or an integer, got " << dim;
      }
    }
  }
  return success();
}

FailureOr<EntryPoint> prepareEntryPoint(func::FuncOp func,
                                        bool typedEndpoints) {
  EntryPoint entry;
  entry.name = func.getSymName().str();
  entry.symbol = "_mlir_ciface_" + entry.name;
  entry.kind = "inference";
  entry.primal = entry.name;
  if (Attribute attr = func->getAttr(kKindAttr)) {
    auto text = dyn_cast<StringAttr>(attr);
    if (!text || !abi::isEntryKind(text.getValue()))
      return func.emitError("entry point '")
             << entry.name << "': '" << kKindAttr << "' must be "
             << abi::entryKindList("\"") << ", got " << attr;
    entry.kind = text.getValue().str();
  }
  if (Attribute attr = func->getAttr(kPrimalAttr)) {
    auto text = dyn_cast<StringAttr>(attr);
    if (!text || text.getValue().empty())
      return func.emitError("entry point '")
             << entry.name << "': '" << kPrimalAttr
             << "' must be a non-empty string, got " << attr;
    entry.primal = text.getValue().str();
  }
  entry.typedEndpoints = typedEndpoints;
  if (Attribute attr = func->getAttr(kOffloadAttr)) {
    auto fail = [&]() {
      return func.emitError("entry point '")
             << entry.name << "': '" << kOffloadAttr
             << "' must be an array of {name, direction = evict|prefetch, "
                "slot >= 0, shape, tier = host|disk for an evict}, got "
             << attr;
    };
    auto list = dyn_cast<ArrayAttr>(attr);
    if (!list)
      return fail();
    for (Attribute item : list) {
      auto dict = dyn_cast<DictionaryAttr>(item);
      auto name = dict ? dict.getAs<StringAttr>("name") : nullptr;
      auto direction = dict ? dict.getAs<StringAttr>("direction") : nullptr;
      auto slot = dict ? dict.getAs<IntegerAttr>("slot") : nullptr;
      auto shape = dict ? dict.getAs<ArrayAttr>("shape") : nullptr;
      auto tier = dict ? dict.getAs<StringAttr>("tier") : nullptr;
      if (!name || !direction || !slot || !shape || slot.getInt() < 0)
        return fail();
      OffloadedValue value;
      value.name = name.str();
      value.direction = direction.str();
      value.slot = slot.getInt();
      value.tier = tier ? tier.str() : "";
      bool evict = value.direction == "evict";
      if ((!evict && value.direction != "prefetch") ||
          (evict != (value.tier == "host" || value.tier == "disk")))
        return fail();
      for (Attribute dim : shape) {
        ShapeDim parsed;
        if (auto symbol = dyn_cast<StringAttr>(dim))
          parsed.symbol = symbol.str();
        else if (auto size = dyn_cast<IntegerAttr>(dim))
          parsed.size = size.getInt();
        else
          return fail();
        value.shape.push_back(parsed);
      }
      entry.offloaded.push_back(std::move(value));
    }
  }
  FunctionType type = func.getFunctionType();
  if (type.getNumResults() != 0)
    return func.emitError("entry point '")
           << entry.name << "' must return nothing: outputs are buffers the "
           << "caller passes (destination-passing style, "
           << "docs/compilation.md)";

  std::set<std::string> names;
  for (auto [index, argType] : llvm::enumerate(type.getInputs())) {
    auto memref = dyn_cast<MemRefType>(argType);
    if (!memref)
      return func.emitError("entry point '")
             << entry.name << "' argument " << index
             << " must be a memref, got " << argType;
    if (!memref.getLayout().isIdentity())
      return func.emitError("entry point '")
             << entry.name << "' argument " << index
             << " must have the identity (row-major, contiguous) layout, got "
             << argType;
    EntryArgument arg;
    arg.dtype = dtypeName(memref.getElementType());
    if (arg.dtype.empty())
      return func.emitError("entry point '")
             << entry.name << "' argument " << index
             << " has an unsupported element type " << memref.getElementType()
             << " (supported: f16, f32, f64, i8, i16, i32, i64, index)";
    arg.rank = memref.getRank();
    arg.shape.resize(arg.rank);
    for (int64_t k = 0; k < arg.rank; ++k)
      if (!memref.isDynamicDim(k))
        arg.shape[k].size = memref.getDimSize(k);
    if (Attribute attr = func.getArgAttr(index, kArgAttr))
      if (failed(readArgAttr(func, index, attr, memref, arg)))
        return failure();
    if (arg.name.empty())
      arg.name = "arg" + std::to_string(index);
    if (arg.role.empty())
      arg.role = isWritten(func.getArgument(index)) ? "output" : "input";
    // Kernels read a host-resident argument in place over PCIe; it is
    // never written.
    if (arg.hostResident &&
        (arg.role != "input" || isWritten(func.getArgument(index))))
      return func.emitError("entry point '")
             << entry.name << "' argument '" << arg.name
             << "' is host_resident, which only an input the entry point "
                "does not write may be";
    if (!names.insert(arg.name).second)
      return func.emitError("entry point '")
             << entry.name << "' has two arguments named '" << arg.name << "'";
    entry.arguments.push_back(std::move(arg));
  }
  func->setAttr(kCInterfaceAttr, UnitAttr::get(func.getContext()));
  return entry;
}

} // namespace

FailureOr<std::vector<EntryPoint>>
hector::prepareEntryPoints(ModuleOp module) {
  SmallVector<func::FuncOp> marked, candidates;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (func->hasAttr(kEntryAttr))
      marked.push_back(func);
    else if (func.isPublic())
      candidates.push_back(func);
  }
  ArrayRef<func::FuncOp> funcs = marked.empty() ? candidates : marked;
  if (funcs.empty())
    return module.emitError("no entry point: the module has no public "
                            "func.func with a body (did the lowering to "
                            "func.func run?)");
  // Built for graphs with typed endpoints (`hectorc --typed-endpoints` marks
  // the module; the lowering marks the functions whose code relies on it):
  // then every entry of the library says so, so that callers check the
  // graph whichever entry they call (a training forward and backward as
  // well as the inference entry).
  bool typedEndpoints =
      module->hasAttr(kTypedEndpointsAttr) ||
      llvm::any_of(funcs, [](func::FuncOp func) {
        return func->hasAttr(kTypedEndpointsAttr);
      });
  std::vector<EntryPoint> entries;
  for (func::FuncOp func : funcs) {
    FailureOr<EntryPoint> entry = prepareEntryPoint(func, typedEndpoints);
    if (failed(entry))
      return failure();
    entries.push_back(std::move(*entry));
  }
  return entries;
}

std::string hector::renderManifest(ArrayRef<EntryPoint> entries,
                                   const ManifestInfo &info) {
  using Json = nlohmann::ordered_json;
  Json root;
  root["format"] = "hector-library-manifest";
  root["format_version"] = 1;
  root["hectorc_version"] = info.hectorcVersion;
  root["target"] = info.target;
  root["gpu_arch"] =
      info.gpuArch.empty() ? Json(nullptr) : Json(info.gpuArch);
  root["library"] = info.library;
  root["runtime"] = info.runtime.empty() ? Json(nullptr) : Json(info.runtime);
  Json list = Json::array();
  for (const EntryPoint &entry : entries) {
    Json e;
    e["name"] = entry.name;
    e["symbol"] = entry.symbol;
    e["target"] = info.target;
    e["kind"] = entry.kind;
    e["primal"] = entry.primal;
    // Present only when set: callers must pass such graphs only.
    if (entry.typedEndpoints)
      e["typed_endpoints"] = true;
    // The graph arrays the runtime's preprocessing must build, in order.
    Json preprocessing = Json::array();
    Json args = Json::array();
    for (const EntryArgument &arg : entry.arguments) {
      if (arg.role == "graph")
        preprocessing.push_back(arg.name);
      // shape: symbols where known, else sizes, else null; sizes: what
      // every call must match exactly (static sizes), else null.
      Json shape = Json::array(), sizes = Json::array();
      for (const ShapeDim &dim : arg.shape) {
        if (!dim.symbol.empty())
          shape.push_back(dim.symbol);
        else if (dim.size >= 0)
          shape.push_back(dim.size);
        else
          shape.push_back(nullptr);
        sizes.push_back(dim.size >= 0 ? Json(dim.size) : Json(nullptr));
      }
      Json a;
      a["role"] = arg.role;
      a["name"] = arg.name;
      a["dtype"] = arg.dtype;
      a["rank"] = arg.rank;
      a["shape"] = std::move(shape);
      a["sizes"] = std::move(sizes);
      // Present only when set: the caller passes pinned, mapped host
      // memory (or a device buffer) that kernels read in place.
      if (arg.hostResident)
        a["host_resident"] = true;
      args.push_back(std::move(a));
    }
    e["preprocessing"] = std::move(preprocessing);
    e["arguments"] = std::move(args);
    // Present only with an offload plan: saved values that travel through
    // the tensor cache bound with hector_offload_bind, not as arguments.
    if (!entry.offloaded.empty()) {
      Json offloaded = Json::array();
      for (const OffloadedValue &value : entry.offloaded) {
        Json o;
        o["name"] = value.name;
        o["direction"] = value.direction;
        o["slot"] = value.slot;
        if (!value.tier.empty())
          o["tier"] = value.tier;
        Json shape = Json::array();
        for (const ShapeDim &dim : value.shape)
          shape.push_back(dim.symbol.empty() ? Json(dim.size)
                                             : Json(dim.symbol));
        o["shape"] = std::move(shape);
        offloaded.push_back(std::move(o));
      }
      e["offload"] = std::move(offloaded);
    }
    list.push_back(std::move(e));
  }
  root["entries"] = std::move(list);
  // Built without exceptions: invalid UTF-8 in a name is replaced rather
  // than thrown on.
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}
