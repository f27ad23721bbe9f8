//===- TypeGroups.h - walks over (destination, edge type) groups -*- C++
//-*-===//
//
// Part of the hgraph-to-htmpl lowering: `hgraph.edge_softmax ... by_type`
// and `hgraph.group_sum` reduce each (destination, edge type) group of
// edges. The runtime keeps the CSR slots of one destination in canonical
// order, edge type first (docs/runtime-graph.md), so a group is a run of
// consecutive slots of its destination's row: one node traversal finds the
// runs and reduces each in place, with no [N, R] table and no atomics.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_TYPEGROUPS_H
#define HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_TYPEGROUPS_H

#include "mlir/IR/Builders.h"

namespace hector::lowering {

/// The graph arrays a walk over the groups reads: `csr_row_ptr`, `csr_eid`
/// and `csr_etype`, and `node_type`, which gives the traversal its node
/// count.
struct TypeGroupArrays {
  mlir::Value rowPtr, edgeIds, edgeTypes, nodeTypes;
};

/// What each edge of a group receives.
enum class TypeGroupResult {
  /// exp(x[e] - max_g x) / Σ_g exp(x - max_g x): a softmax per group.
  Softmax,
  /// Σ_g x: the group's sum.
  Sum,
};

/// Emits at `builder`'s insertion point one node traversal that writes
/// `output[e, j]` from `input[e', j]` (both [E, width] memrefs indexed by
/// canonical edge id) for every edge e, column j and the edges e' of e's
/// (destination, edge type) group. O(E·width) work plus a binary search of
/// O(log deg) per group; no scratch memory.
void emitTypeGroupWalk(mlir::OpBuilder &builder, mlir::Location loc,
                       TypeGroupResult result, mlir::Value input,
                       mlir::Value output, int64_t width,
                       const TypeGroupArrays &graph);

} // namespace hector::lowering

#endif // HECTOR_LIB_CONVERSION_HGRAPHTOHTMPL_TYPEGROUPS_H
