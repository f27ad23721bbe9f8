//===- TypeGroups.cpp - walks over (destination, edge type) groups -------===//
//
// The traversal of TypeGroups.h. The warp of destination t walks t's CSR
// row; at the first slot of each run of one edge type it finds the run's
// end by a binary search over the row (the types ascend inside a row) and
// reduces the run column by column: its maximum and its sum of exp(x - max)
// for a softmax, its sum otherwise, then writes every edge of the run. A
// run's edges have consecutive canonical ids (canonical order is (type,
// destination, source)), so the loops over a run count edge ids: the GPU
// lowering splits them over the lanes, and the loads are contiguous.
//
// The cost is O(E·width) loads and stores, as the per-destination softmax,
// plus O(log deg) loads per group and one csr_etype load per slot. The
// groups are found in the row itself, so nothing the size of N·R (one
// entry per (destination, type) pair, mostly empty on graphs with many
// relations) is allocated, and no graph array is added. It relies on the
// order that hector_graph_build produces (and that the GPU preprocessing
// copies, docs/runtime-graph.md); arrays in another order would give
// wrong groups.
//
//===----------------------------------------------------------------------===//

#include "TypeGroups.h"

#include "../TemplateUtils/TemplateUtils.h"

#include "hector/Dialect/HTmpl/IR/HTmpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace hector;
using namespace hector::lowering;
using hector::templates::constIndex;
using hector::templates::loadIndex;
namespace ht = hector::htmpl;

namespace {

/// The first slot in [from, end) whose edge type is not `type`, given that
/// the slots of `type` come first there (a row's types ascend).
Value runEnd(OpBuilder &b, Location loc, Value edgeTypes, Value type,
             Value from, Value end) {
  return templates::lowerBound(b, loc, from, end, [&](OpBuilder &b, Value mid) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                 loadIndex(b, loc, edgeTypes, mid), type);
  });
}

} // namespace

void hector::lowering::emitTypeGroupWalk(OpBuilder &builder, Location loc,
                                         TypeGroupResult result, Value input,
                                         Value output, int64_t width,
                                         const TypeGroupArrays &graph) {
  MLIRContext *ctx = builder.getContext();
  auto whole = ht::AccessSchemeAttr::get(ctx, ht::AccessScheme::Whole);
  auto traversal = ht::TraversalOp::create(
      builder, loc, ValueRange{}, Value(), graph.nodeTypes,
      ValueRange{input, graph.rowPtr, graph.edgeIds, graph.edgeTypes},
      ValueRange{output}, ht::Domain::Nodes, ht::Adjacency::None,
      builder.getArrayAttr({whole, whole, whole, whole, whole}));

  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&traversal.getBody());
  for (int i = 0; i < 6; ++i)
    body->addArgument(builder.getIndexType(), loc);
  Value node = body->getArgument(0);
  Type element = cast<MemRefType>(input.getType()).getElementType();
  Value c0 = constIndex(builder, loc, 0), c1 = constIndex(builder, loc, 1);
  Value begin = loadIndex(builder, loc, graph.rowPtr, node);
  Value end = loadIndex(builder, loc, graph.rowPtr,
                        arith::AddIOp::create(builder, loc, node, c1));
  auto constFloat = [&](OpBuilder &b, double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(element, v));
  };

  // One loop over the edges [first, last) of a group, in one column: a
  // reduction (`step` combines the accumulator with x) or, without `init`,
  // the writes of `step(x)` to every edge. The loop variable is the edge
  // id, so the GPU lowering may split the loop over a warp's lanes (each
  // lane stores its own edges) and the loads are contiguous.
  auto overRun =
      [&](OpBuilder &b, Value first, Value last, Value column,
          std::optional<double> init,
          function_ref<Value(OpBuilder &, Value, Value)> step) -> Value {
    SmallVector<Value> inits;
    if (init)
      inits.push_back(constFloat(b, *init));
    auto loop = scf::ForOp::create(
        b, loc, first, last, c1, inits,
        [&](OpBuilder &e, Location, Value edge, ValueRange acc) {
          Value x =
              memref::LoadOp::create(e, loc, input, ValueRange{edge, column});
          if (init) {
            scf::YieldOp::create(e, loc, step(e, acc[0], x));
            return;
          }
          memref::StoreOp::create(e, loc, step(e, Value(), x), output,
                                  ValueRange{edge, column});
          scf::YieldOp::create(e, loc);
        });
    return init ? loop.getResult(0) : Value();
  };

  scf::ForOp::create(
      builder, loc, begin, end, c1, ValueRange{},
      [&](OpBuilder &b, Location, Value slot, ValueRange) {
        // A run starts at the row's first slot and where the type changes.
        Value type = loadIndex(b, loc, graph.edgeTypes, slot);
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            slot, begin);
        Value previous = arith::SelectOp::create(
            b, loc, first, slot, arith::SubIOp::create(b, loc, slot, c1));
        Value changed = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ne,
            loadIndex(b, loc, graph.edgeTypes, previous), type);
        Value starts = arith::OrIOp::create(b, loc, first, changed);
        auto ifOp = scf::IfOp::create(b, loc, starts, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard afterRun(b);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
        Value last = runEnd(b, loc, graph.edgeTypes, type,
                            arith::AddIOp::create(b, loc, slot, c1), end);
        // The group's slots hold consecutive canonical edge ids: canonical
        // order is (type, destination, source) and a row's slots follow it.
        Value firstEdge = loadIndex(b, loc, graph.edgeIds, slot);
        Value lastEdge = arith::AddIOp::create(
            b, loc, firstEdge, arith::SubIOp::create(b, loc, last, slot));
        scf::ForOp::create(
            b, loc, c0, constIndex(b, loc, width), c1, ValueRange{},
            [&](OpBuilder &c, Location, Value column, ValueRange) {
              if (result == TypeGroupResult::Sum) {
                Value sum =
                    overRun(c, firstEdge, lastEdge, column, 0.0,
                            [&](OpBuilder &e, Value acc, Value x) {
                              return arith::AddFOp::create(e, loc, acc, x);
                            });
                overRun(c, firstEdge, lastEdge, column, std::nullopt,
                        [&](OpBuilder &, Value, Value) { return sum; });
                scf::YieldOp::create(c, loc);
                return;
              }
              Value max =
                  overRun(c, firstEdge, lastEdge, column,
                          -std::numeric_limits<double>::infinity(),
                          [&](OpBuilder &e, Value acc, Value x) -> Value {
                            return arith::MaximumFOp::create(e, loc, acc, x);
                          });
              auto shiftedExp = [&](OpBuilder &e, Value x) -> Value {
                return math::ExpOp::create(
                    e, loc, arith::SubFOp::create(e, loc, x, max));
              };
              Value sum = overRun(
                  c, firstEdge, lastEdge, column, 0.0,
                  [&](OpBuilder &e, Value acc, Value x) -> Value {
                    return arith::AddFOp::create(e, loc, acc, shiftedExp(e, x));
                  });
              overRun(c, firstEdge, lastEdge, column, std::nullopt,
                      [&](OpBuilder &e, Value, Value x) -> Value {
                        return arith::DivFOp::create(e, loc, shiftedExp(e, x),
                                                     sum);
                      });
              scf::YieldOp::create(c, loc);
            });
        b.setInsertionPointAfter(ifOp);
        scf::YieldOp::create(b, loc);
      });
  ht::YieldOp::create(builder, loc);
}
