// The built graph behind the opaque hector_graph of hector/graph.h, and the
// preprocessing that fills it.
#ifndef HECTOR_RUNTIME_GRAPH_IMPL_H
#define HECTOR_RUNTIME_GRAPH_IMPL_H

#include <cstdint>
#include <vector>

#include "hector/graph.h"

struct hector_graph {
  hector_graph_sizes sizes{};
  // Indexed by hector_graph_array_id; the HECTOR_GRAPH_EDGE_NORM slot stays
  // empty (edge_norm is float).
  std::vector<int32_t> i32[HECTOR_GRAPH_NUM_ARRAYS];
  std::vector<float> edge_norm;
};

namespace hector {

// Validates `in` (not NULL) and fills `g` (empty). Returns a hector_status
// with the message set on failure; `g` is then partly filled and must be
// discarded. Never throws.
int preprocess_graph(const hector_graph_input& in, hector_graph& g);

}  // namespace hector

#endif
