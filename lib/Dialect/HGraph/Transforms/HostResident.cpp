//===- HostResident.cpp - mark inputs kept in host memory -------*- C++ -*-===//
//
// `hgraph-host-resident{names=h,x}` puts the unit attribute
// `hgraph.host_resident` on every hgraph.func argument of those names. The
// lowering carries it to the entry point's `hector.arg` (and so to the
// manifest); CUDA kernels then read the argument where it is, in pinned and
// mapped host memory. Only node-wise inputs qualify: weights are small and
// read by every block, edge-wise values are laid out by the compiler, and
// saved values and cotangents are produced on the GPU.
//
//===----------------------------------------------------------------------===//

#include "hector/Dialect/HGraph/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace hector {
#define GEN_PASS_DEF_HGRAPHHOSTRESIDENT
#include "hector/Dialect/HGraph/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
namespace hg = hector::hgraph;

namespace {

constexpr StringLiteral kRole = "hgraph.role";
constexpr StringLiteral kHostResident = "hgraph.host_resident";

struct HGraphHostResidentPass
    : public hector::impl::HGraphHostResidentBase<HGraphHostResidentPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The names, each once, in the order given.
    llvm::StringSet<> wanted;
    SmallVector<std::string> order;
    for (const std::string &name : names) {
      if (name.empty()) {
        module.emitError("hgraph-host-resident: empty argument name");
        return signalPassFailure();
      }
      if (wanted.insert(name).second)
        order.push_back(name);
    }

    bool failed = false;
    llvm::StringSet<> found;
    // Every node-wise input, for the message about a name nobody has.
    llvm::StringSet<> seenInputs;
    SmallVector<std::string> nodeInputs;
    for (hg::FuncOp func : module.getOps<hg::FuncOp>()) {
      for (BlockArgument arg : func.getArguments()) {
        unsigned index = arg.getArgNumber();
        if (isa<hg::GraphType>(arg.getType()))
          continue;
        std::string name = func.getArgumentName(index);
        auto feature = dyn_cast<hg::FeatureType>(arg.getType());
        auto role = func.getArgAttrOfType<StringAttr>(index, kRole);
        bool input = !role || role.getValue() == "input";
        if (feature && !feature.isEdgeWise() && input &&
            seenInputs.insert(name).second)
          nodeInputs.push_back(name);
        if (!wanted.contains(name))
          continue;
        found.insert(name);
        auto fail = [&]() {
          failed = true;
          return mlir::emitError(arg.getLoc())
                 << "hgraph-host-resident: argument '" << name << "' of @"
                 << func.getSymName() << " ";
        };
        if (!feature) {
          fail() << "is a weight: only node-wise inputs (node features) "
                    "can stay in host memory";
          continue;
        }
        if (feature.isEdgeWise()) {
          fail() << "is edge-wise: only node-wise inputs (node features) "
                    "can stay in host memory";
          continue;
        }
        if (!input) {
          fail() << "has role '" << role.getValue()
                 << "': only inputs the caller provides can stay in host "
                    "memory";
          continue;
        }
        func.setArgAttr(index, kHostResident, UnitAttr::get(&getContext()));
      }
    }

    for (const std::string &name : order) {
      if (found.contains(name))
        continue;
      InFlightDiagnostic diag = module.emitError()
                                << "hgraph-host-resident: no argument named '"
                                << name << "'";
      if (nodeInputs.empty())
        diag << " (the module has no node-wise inputs)";
      else
        diag << " (node-wise inputs: " << llvm::join(nodeInputs, ", ") << ")";
      failed = true;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
