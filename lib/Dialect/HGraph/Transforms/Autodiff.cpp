//===- Autodiff.cpp - reverse-mode differentiation of hgraph.func -*- C++
//-*-===//
//
// For each primal `hgraph.func @f` this builds `@f_bwd` by walking the body in
// reverse and applying each op's vector-Jacobian rule (its VJPOpInterface,
// lib/Dialect/HGraph/IR/HGraphVJP.cpp), written with hgraph ops so that the
// backward goes through the same lowering (GEMM and traversal templates,
// fusion) as the forward. Every forward value the rules read is
// either an argument of `@f_bwd` (an argument of `@f`, or a value `@f_fwd`
// saved) or recomputed inside `@f_bwd`; the save policy decides which, and
// the decision is visible in the two functions' signatures.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/Transforms/Passes.h"

#include "hector/Dialect/HGraph/IR/PullbackBuilder.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace hector {
#define GEN_PASS_DEF_HGRAPHAUTODIFF
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
namespace hg = hector::hgraph;

namespace {

enum class SavePolicy { Materialized, All, None };

// Attributes of the training ABI (docs/compilation.md).
constexpr StringLiteral kName = "hgraph.name";
constexpr StringLiteral kRole = "hgraph.role";
constexpr StringLiteral kKind = "hgraph.kind";
constexpr StringLiteral kPrimal = "hgraph.primal";

std::string resultName(hg::FuncOp func, unsigned index) {
  if (auto name = func.getResultAttrOfType<StringAttr>(index, kName))
    return name.str();
  return ("result" + Twine(index)).str();
}

/// Ops that are cheaper to redo than to read back: graph constants and
/// weight reads.
bool isFree(Operation *op) {
  return isa<hg::RelationNormOp, hg::DegreeNormOp, hg::TypedVectorOp,
             hg::ZerosOp, hg::WeightProductOp>(op);
}

/// Values the forward lowering writes to memory anyway, which the default
/// policy saves rather than recomputes.
bool isMaterialized(Value value) { return hg::isStoredByLowering(value); }

/// Rows at least this wide make a per-edge dot product worth saving.
constexpr int64_t kMinSavedDotWidth = 8;

/// A per-edge dot product of rows, which the default policy saves too:
/// recomputing it reads two rows per edge again (HGT's k·q for the
/// gradient of its per-type μ: 2.8 ms of a 31 ms training step on the mag
/// shape, H200), saving it one value per edge and head. The forward stores
/// it once, beside the score it feeds.
bool isCostlyToRecompute(Operation *op) {
  auto dot = dyn_cast<hg::DotOp>(op);
  if (!dot)
    return false;
  auto type = cast<hg::FeatureType>(dot.getResult().getType());
  auto rows = cast<hg::FeatureType>(dot.getLhs().getType());
  return type.isEdgeWise() && rows.getHeadWidth() >= kMinSavedDotWidth;
}

/// Ops whose result does not vary with their operands (zero derivative).
bool isPiecewiseConstant(Operation *op) { return isa<hg::EqualOp>(op); }

/// The `hgraph.materialization` entry of an argument or result attribute
/// dictionary, which the training functions keep: an edge-wise value given
/// or returned one row per (source, edge type) pair stays so in @f_fwd and
/// @f_bwd, as in @f.
std::optional<NamedAttribute> materializationOf(DictionaryAttr dict) {
  if (!dict)
    return std::nullopt;
  return dict.getNamed(hg::HGraphDialect::getMaterializationAttrName());
}

bool isCompact(DictionaryAttr dict) {
  std::optional<NamedAttribute> entry = materializationOf(dict);
  auto attr = entry ? dyn_cast<hg::MaterializationAttr>(entry->getValue())
                    : nullptr;
  return attr && attr.getValue() == hg::Materialization::Compact;
}

//===----------------------------------------------------------------------===//
// Differentiator: one primal function.
//===----------------------------------------------------------------------===//

class Differentiator : public hg::PullbackBuilder {
public:
  Differentiator(hg::FuncOp primal, SavePolicy policy,
                 const llvm::StringSet<> &wrt)
      : primal(primal), policy(policy), wrt(wrt), builder(primal.getContext()) {
  }

  LogicalResult run();

  // PullbackBuilder: what the ops' rules build the backward with.
  OpBuilder &getBuilder() override { return builder; }
  Location getLoc() const override { return loc; }
  Value getGraph() override { return body->getArgument(0); }
  Value forward(Value primalValue) override;
  bool isActive(Value value) const override { return active.contains(value); }
  void addCotangent(Value primalValue, Value contribution) override;
  bool savesStoredValues() const override { return policy != SavePolicy::None; }

private:
  LogicalResult findActiveValues();
  LogicalResult checkCompactValues();

  // The backward function under construction.
  void recompute(Operation *op);
  BlockArgument newArgument(Type type, Location loc);
  LogicalResult pullback(Operation *op);
  void finishBackward();
  void buildForward();

  Value add(Value a, Value b) { return make<hg::AddOp>(a.getType(), a, b); }

  hg::FuncOp primal;
  SavePolicy policy;
  const llvm::StringSet<> &wrt;
  OpBuilder builder;
  Location loc = primal.getLoc();

  llvm::DenseSet<Value> active;
  Block *body = nullptr;
  /// Primal value -> its value in the backward body (argument, saved or
  /// recomputed).
  IRMapping inBackward;
  /// Primal value -> the sum of its gradient contributions so far.
  DenseMap<Value, Value> cotangents;

  // Arguments of the backward function, in creation order.
  DenseMap<unsigned, BlockArgument> primalArguments; // by primal index
  SmallVector<Value> savedValues;                    // primal values
  SmallVector<BlockArgument> savedArguments;
  SmallVector<BlockArgument> resultGradients;
};

LogicalResult Differentiator::findActiveValues() {
  Block &entry = primal.getBody().front();
  // Forward: values that vary with a differentiated argument.
  llvm::DenseSet<Value> varied;
  for (BlockArgument arg : entry.getArguments())
    if (!isa<hg::GraphType>(arg.getType()) &&
        wrt.contains(primal.getArgumentName(arg.getArgNumber())))
      varied.insert(arg);
  for (Operation &op : entry) {
    if (isPiecewiseConstant(&op))
      continue;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      varied.insert(op.result_begin(), op.result_end());
  }
  // Backward: values a result depends on.
  llvm::DenseSet<Value> useful;
  for (Value result : entry.getTerminator()->getOperands())
    useful.insert(result);
  for (Operation &op : llvm::reverse(entry))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return useful.contains(v); }))
      useful.insert(op.operand_begin(), op.operand_end());
  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
  return success();
}

/// A compact argument's gradient would be a sum over the edges of each pair,
/// and a compact result's cotangent must count once per pair, not once per
/// edge: neither is built yet, so both are reported rather than differentiated
/// per edge (a gradient of another shape than its argument).
LogicalResult Differentiator::checkCompactValues() {
  Block &entry = primal.getBody().front();
  for (BlockArgument arg : entry.getArguments())
    if (isActive(arg) && isCompact(primal.getArgAttrDict(arg.getArgNumber())))
      return mlir::emitError(arg.getLoc())
             << "hgraph-autodiff: argument '"
             << primal.getArgumentName(arg.getArgNumber())
             << "' has compact materialization (one row per unique (source, "
                "edge type) pair); its gradient is not supported yet: pass it "
                "one row per edge, or leave it out of 'wrt'";
  for (auto [index, result] :
       llvm::enumerate(entry.getTerminator()->getOperands()))
    if (isActive(result) && isCompact(primal.getResultAttrDict(index)))
      return primal.emitError("hgraph-autodiff: result #")
             << index
             << " has compact materialization (one row per unique (source, "
                "edge type) pair) and depends on a differentiated argument; "
                "differentiating through a compact result is not supported "
                "yet: return it one row per edge";
  return success();
}

BlockArgument Differentiator::newArgument(Type type, Location argLoc) {
  return body->addArgument(type, argLoc);
}

/// The value of a forward value inside the backward body: an argument, a
/// saved value, or a recomputation, following the save policy. A
/// recomputation needs its operands' values first: they are found with an
/// explicit stack (a long chain of recomputed row-wise ops must not recurse
/// once per op), and each forward value is mapped once.
Value Differentiator::forward(Value value) {
  // (value, whether its operands were asked for already)
  SmallVector<std::pair<Value, bool>> stack{{value, false}};
  while (!stack.empty()) {
    auto [next, expanded] = stack.back();
    if (inBackward.contains(next)) {
      stack.pop_back();
      continue;
    }
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      BlockArgument mapped = newArgument(arg.getType(), arg.getLoc());
      primalArguments[arg.getArgNumber()] = mapped;
      inBackward.map(next, mapped);
      stack.pop_back();
      continue;
    }
    Operation *op = next.getDefiningOp();
    bool save = !isFree(op) &&
                (policy == SavePolicy::All ||
                 (policy == SavePolicy::Materialized &&
                  (isMaterialized(next) || isCostlyToRecompute(op))));
    if (save) {
      BlockArgument mapped = newArgument(next.getType(), next.getLoc());
      savedValues.push_back(next);
      savedArguments.push_back(mapped);
      inBackward.map(next, mapped);
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (Value operand : llvm::reverse(op->getOperands()))
        if (!inBackward.contains(operand))
          stack.push_back({operand, false});
      continue;
    }
    recompute(op);
    stack.pop_back();
  }
  return inBackward.lookup(value);
}

/// Clones `op`, whose operands are all mapped, into the backward body right
/// after the last of them, so recomputations always precede the gradient
/// ops that read them.
void Differentiator::recompute(Operation *op) {
  Operation *after = nullptr;
  for (Value operand : op->getOperands()) {
    Operation *def = inBackward.lookup(operand).getDefiningOp();
    if (def && (!after || after->isBeforeInBlock(def)))
      after = def;
  }
  OpBuilder::InsertionGuard guard(builder);
  if (after)
    builder.setInsertionPointAfter(after);
  else
    builder.setInsertionPointToStart(body);
  builder.clone(*op, inBackward);
}

void Differentiator::addCotangent(Value value, Value contribution) {
  auto [it, inserted] = cotangents.try_emplace(value, contribution);
  if (!inserted)
    it->second = add(it->second, contribution);
}

/// Applies the vector-Jacobian rule of `op` (its VJPOpInterface) if a
/// gradient reaches its result.
LogicalResult Differentiator::pullback(Operation *op) {
  Value dy =
      op->getNumResults() == 1 ? cotangents.lookup(op->getResult(0)) : Value();
  if (!dy)
    return success(); // no result reaches a differentiated output
  loc = op->getLoc();
  auto rule = dyn_cast<hg::VJPOpInterface>(op);
  if (!rule)
    return op->emitError("hgraph-autodiff: no gradient rule for '")
           << op->getName() << "'";
  return rule.buildPullback(*this, dy);
}

//===----------------------------------------------------------------------===//
// The two functions
//===----------------------------------------------------------------------===//

/// Orders the backward arguments as the ABI wants them (graph, primal
/// arguments, saved values, result gradients), names them, and returns the
/// gradient of every differentiated argument.
void Differentiator::finishBackward() {
  MLIRContext *ctx = primal.getContext();
  auto attrs = [&](StringRef name, StringRef role,
                   DictionaryAttr primalAttrs = {}) {
    SmallVector<NamedAttribute, 3> list{
        builder.getNamedAttr(kName, builder.getStringAttr(name))};
    if (!role.empty())
      list.push_back(builder.getNamedAttr(kRole, builder.getStringAttr(role)));
    if (std::optional<NamedAttribute> layout = materializationOf(primalAttrs))
      list.push_back(*layout);
    return DictionaryAttr::get(ctx, list);
  };

  // The results: one gradient per differentiated argument.
  SmallVector<Value> gradients;
  SmallVector<Attribute> resultAttrs;
  Block &entry = primal.getBody().front();
  builder.setInsertionPointToEnd(body);
  for (BlockArgument arg : entry.getArguments()) {
    if (isa<hg::GraphType>(arg.getType()))
      continue;
    std::string name = primal.getArgumentName(arg.getArgNumber());
    if (!wrt.contains(name))
      continue;
    Value gradient = cotangents.lookup(arg);
    if (!gradient)
      gradient = make<hg::ZerosOp>(arg.getType());
    gradients.push_back(gradient);
    resultAttrs.push_back(attrs("d_" + name, "grad",
                                primal.getArgAttrDict(arg.getArgNumber())));
  }
  hg::ReturnOp::create(builder, loc, gradients);

  // The arguments, reordered.
  SmallVector<std::pair<BlockArgument, DictionaryAttr>> ordered;
  ordered.push_back({body->getArgument(0), DictionaryAttr::get(ctx)});
  for (BlockArgument arg : entry.getArguments()) {
    auto it = primalArguments.find(arg.getArgNumber());
    if (it != primalArguments.end())
      ordered.push_back(
          {it->second, attrs(primal.getArgumentName(arg.getArgNumber()), "",
                             primal.getArgAttrDict(arg.getArgNumber()))});
  }
  for (auto [index, arg] : llvm::enumerate(savedArguments))
    ordered.push_back({arg, attrs(("saved" + Twine(index)).str(), "saved")});
  for (auto [index, arg] : llvm::enumerate(resultGradients))
    ordered.push_back({arg, attrs("d_" + resultName(primal, index),
                                  "grad_output",
                                  primal.getResultAttrDict(index))});

  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  for (auto [arg, attr] : ordered) {
    argTypes.push_back(arg.getType());
    argAttrs.push_back(attr);
  }
  SmallVector<Type> resultTypes;
  for (Value gradient : gradients)
    resultTypes.push_back(gradient.getType());

  builder.setInsertionPointAfter(primal);
  auto backward = hg::FuncOp::create(
      builder, primal.getLoc(), (primal.getSymName() + "_bwd").str(),
      builder.getFunctionType(argTypes, resultTypes), StringAttr(),
      builder.getArrayAttr(argAttrs), builder.getArrayAttr(resultAttrs));
  backward->setAttr(kKind, builder.getStringAttr("training_backward"));
  backward->setAttr(kPrimal, builder.getStringAttr(primal.getSymName()));
  Block *ordered_body = new Block();
  backward.getBody().push_back(ordered_body);
  for (auto [arg, attr] : ordered)
    arg.replaceAllUsesWith(
        ordered_body->addArgument(arg.getType(), arg.getLoc()));
  ordered_body->getOperations().splice(ordered_body->end(),
                                       body->getOperations());
  delete body;
  body = nullptr;
}

/// `@f_fwd`: a copy of `@f` that also returns the saved values.
void Differentiator::buildForward() {
  MLIRContext *ctx = primal.getContext();
  builder.setInsertionPointAfter(primal);
  auto training = cast<hg::FuncOp>(builder.clone(*primal));
  training.setSymName((primal.getSymName() + "_fwd").str());
  training->setAttr(kKind, builder.getStringAttr("training_forward"));
  training->setAttr(kPrimal, builder.getStringAttr(primal.getSymName()));

  // Map primal values to the copy's by position.
  IRMapping toCopy;
  Block &from = primal.getBody().front(), &to = training.getBody().front();
  for (auto [a, b] : llvm::zip(from.getArguments(), to.getArguments()))
    toCopy.map(a, b);
  for (auto [a, b] : llvm::zip(from, to))
    for (auto [ra, rb] : llvm::zip(a.getResults(), b.getResults()))
      toCopy.map(ra, rb);

  auto ret = cast<hg::ReturnOp>(to.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> resultAttrs;
  auto attrs = [&](StringRef name, StringRef role,
                   DictionaryAttr primalAttrs = {}) {
    SmallVector<NamedAttribute, 3> list{
        builder.getNamedAttr(kName, builder.getStringAttr(name)),
        builder.getNamedAttr(kRole, builder.getStringAttr(role))};
    if (std::optional<NamedAttribute> layout = materializationOf(primalAttrs))
      list.push_back(*layout);
    return DictionaryAttr::get(ctx, list);
  };
  for (unsigned i = 0, e = results.size(); i < e; ++i)
    resultAttrs.push_back(attrs(resultName(primal, i), "output",
                                primal.getResultAttrDict(i)));
  for (auto [index, value] : llvm::enumerate(savedValues)) {
    results.push_back(toCopy.lookup(value));
    resultAttrs.push_back(attrs(("saved" + Twine(index)).str(), "saved"));
  }
  ret->setOperands(results);
  SmallVector<Type> resultTypes;
  for (Value value : results)
    resultTypes.push_back(value.getType());
  training.setFunctionType(
      builder.getFunctionType(training.getArgumentTypes(), resultTypes));
  training.setAllResultAttrs(resultAttrs);
}

LogicalResult Differentiator::run() {
  if (failed(findActiveValues()) || failed(checkCompactValues()))
    return failure();
  SymbolTable symbols(primal->getParentOp());
  for (StringRef suffix : {"_fwd", "_bwd"})
    if (symbols.lookup((primal.getSymName() + suffix).str()))
      return primal.emitError("hgraph-autodiff: cannot add @")
             << primal.getSymName() << suffix
             << ": a symbol of that name exists";

  body = new Block();
  Block &entry = primal.getBody().front();
  inBackward.map(primal.getGraph(),
                 body->addArgument(primal.getGraph().getType(), loc));
  builder.setInsertionPointToEnd(body);
  auto ret = cast<hg::ReturnOp>(entry.getTerminator());
  for (Value result : ret.getOperands()) {
    BlockArgument gradient = newArgument(result.getType(), result.getLoc());
    resultGradients.push_back(gradient);
    if (isActive(result))
      addCotangent(result, gradient);
  }
  for (Operation &op : llvm::reverse(entry.without_terminator())) {
    if (failed(pullback(&op))) {
      delete body;
      return failure();
    }
  }
  finishBackward();
  buildForward();
  return success();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct HGraphAutodiffPass
    : public hector::impl::HGraphAutodiffBase<HGraphAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<SavePolicy> policy =
        llvm::StringSwitch<std::optional<SavePolicy>>(save)
            .Case("materialized", SavePolicy::Materialized)
            .Case("all", SavePolicy::All)
            .Case("none", SavePolicy::None)
            .Default(std::nullopt);
    if (!policy) {
      module.emitError("hgraph-autodiff: unknown save policy '")
          << save << "' (one of: materialized, all, none)";
      return signalPassFailure();
    }

    SmallVector<hg::FuncOp> primals;
    for (hg::FuncOp func : module.getOps<hg::FuncOp>())
      if (!func->hasAttr(kKind))
        primals.push_back(func);
    for (hg::FuncOp func : primals) {
      // The arguments to differentiate: the named ones, or all.
      llvm::StringSet<> names, known, seeds;
      for (BlockArgument arg : func.getArguments())
        if (isa<hg::SeedType>(arg.getType()))
          seeds.insert(func.getArgumentName(arg.getArgNumber()));
        else if (!isa<hg::GraphType>(arg.getType()))
          known.insert(func.getArgumentName(arg.getArgNumber()));
      for (const std::string &name : wrt) {
        if (seeds.contains(name)) {
          func.emitError("hgraph-autodiff: 'wrt' names '")
              << name << "', a seed, which has no gradient";
          return signalPassFailure();
        }
        if (!known.contains(name)) {
          func.emitError("hgraph-autodiff: 'wrt' names '")
              << name << "', which is not an argument of @"
              << func.getSymName();
          return signalPassFailure();
        }
        names.insert(name);
      }
      if (wrt.empty())
        names = std::move(known);
      func->setAttr(kKind, StringAttr::get(&getContext(), "inference"));
      if (failed(Differentiator(func, *policy, names).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
