// Per-graph preprocessing (docs/compilation.md, "Graph preprocessing").
//
// Every ordering is built by stable counting sorts (least significant key
// first), so the whole build is O(N + E + T + R) with no comparison sort:
//
//   by src                 -> (src)
//   by etype               -> (etype, src)          compact pairs
//   by dst                 -> (dst, etype, src)     CSR slots
//   by etype               -> (etype, dst, src)     canonical order
//
// Each pass is stable and the first starts from the input order, so ties
// (duplicate edges) keep their input order, as the contract asks. CSR slots
// of one destination are therefore in canonical order (edge type, then
// source), which keeps edges of one type together inside a row.
#include <cinttypes>
#include <limits>
#include <new>
#include <stdexcept>

#include "../error.h"
#include "graph_impl.h"

namespace hector {
namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();  // 2^31 - 1

// Checks the shape of one input array (not its values).
int check_array(const hector_index_array& a, const char* what) {
  if (a.length < 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_build: %s has negative length %" PRId64,
                what, a.length);
  if (a.length > kMaxCount)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_build: %s has %" PRId64
                " elements; at most 2^31 - 1 are supported (all outputs are int32)",
                what, a.length);
  if (a.elem_bytes != 4 && a.elem_bytes != 8)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_build: %s.elem_bytes is %d; it must be 4 (int32) or 8 (int64)", what,
                static_cast<int>(a.elem_bytes));
  if (a.reserved != 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_build: %s.reserved must be 0", what);
  if (a.length > 0 && !a.data)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_build: %s.data is NULL but its length is %" PRId64, what, a.length);
  return HECTOR_OK;
}

// Copies ids into int32 while checking each lies in [0, upper); the message
// names the first offending index. `kind` and `bound` describe the range.
template <typename T>
int load_ids_as(const T* p, int64_t n, int64_t upper, const char* what, const char* kind,
                const char* bound, std::vector<int32_t>& out) {
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(p[i]);
    if (v < 0 || v >= upper)
      return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                  "hector_graph_build: %s[%" PRId64 "] = %" PRId64
                  " is not a %s in [0, %" PRId64 ") (%s = %" PRId64 ")",
                  what, i, v, kind, upper, bound, upper);
    out[static_cast<size_t>(i)] = static_cast<int32_t>(v);
  }
  return HECTOR_OK;
}

int load_ids(const hector_index_array& a, int64_t upper, const char* what, const char* kind,
             const char* bound, std::vector<int32_t>& out) {
  if (a.elem_bytes == 4)
    return load_ids_as(static_cast<const int32_t*>(a.data), a.length, upper, what, kind, bound,
                       out);
  return load_ids_as(static_cast<const int64_t*>(a.data), a.length, upper, what, kind, bound, out);
}

// One stable counting-sort pass: writes the items of `in` (or 0..n-1 when
// `in` is NULL) into `out` ordered by key[item] in [0, k), keeping their
// relative order among equal keys. `offsets` receives k + 1 entries: items
// with key j land at out[offsets[j] .. offsets[j+1]-1].
void counting_pass(const int32_t* in, const std::vector<int32_t>& key, int64_t k, int32_t* out,
                   std::vector<int32_t>& offsets) {
  const size_t n = key.size();
  offsets.assign(static_cast<size_t>(k) + 1, 0);
  for (size_t i = 0; i < n; ++i) ++offsets[static_cast<size_t>(key[i]) + 1];
  for (size_t j = 0; j < static_cast<size_t>(k); ++j) offsets[j + 1] += offsets[j];
  std::vector<int32_t> cursor(offsets.begin(), offsets.end() - 1);
  if (!in) {
    for (size_t i = 0; i < n; ++i) out[cursor[static_cast<size_t>(key[i])]++] = static_cast<int32_t>(i);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t item = in[i];
    out[cursor[static_cast<size_t>(key[static_cast<size_t>(item)])]++] = item;
  }
}

int build(const hector_graph_input& in, hector_graph& g) {
  // Shapes first, then counts, then values: the cheapest checks first.
  if (int s = check_array(in.node_type, "node_type")) return s;
  if (int s = check_array(in.src, "src")) return s;
  if (int s = check_array(in.dst, "dst")) return s;
  if (int s = check_array(in.etype, "etype")) return s;
  const int64_t n = in.node_type.length, e = in.src.length;
  const int64_t t = in.num_node_types, r = in.num_edge_types;
  if (in.dst.length != e || in.etype.length != e)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_build: mismatched edge arrays: src has %" PRId64 " elements, dst %" PRId64
                ", etype %" PRId64 "; all must have E",
                e, in.dst.length, in.etype.length);
  for (auto [what, v] : {std::pair<const char*, int64_t>{"num_node_types", t}, {"num_edge_types", r}}) {
    if (v < 0)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_build: %s is negative (%" PRId64 ")",
                  what, v);
    if (v > kMaxCount)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "hector_graph_build: %s is %" PRId64 "; at most 2^31 - 1 is supported", what, v);
  }

  std::vector<int32_t>* a = g.i32;
  std::vector<int32_t>& node_type = a[HECTOR_GRAPH_NODE_TYPE];
  std::vector<int32_t> src, dst, ety;
  if (int s = load_ids(in.node_type, t, "node_type", "node type", "num_node_types", node_type))
    return s;
  if (int s = load_ids(in.src, n, "src", "node id", "N", src)) return s;
  if (int s = load_ids(in.dst, n, "dst", "node id", "N", dst)) return s;
  if (int s = load_ids(in.etype, r, "etype", "edge type", "num_edge_types", ety)) return s;
  g.sizes = {n, e, t, r, 0};
  const size_t ne = static_cast<size_t>(e);

  // Nodes grouped by type.
  a[HECTOR_GRAPH_NTYPE_PERM].resize(static_cast<size_t>(n));
  counting_pass(nullptr, node_type, t, a[HECTOR_GRAPH_NTYPE_PERM].data(),
                a[HECTOR_GRAPH_NTYPE_OFFSETS]);

  // Input edge indices, sorted by (etype, src).
  std::vector<int32_t> by_src(ne), by_type_src(ne), scratch;
  counting_pass(nullptr, src, n, by_src.data(), scratch);
  counting_pass(by_src.data(), ety, r, by_type_src.data(), scratch);

  // Compact pairs: each run of equal (etype, src) in that order is one pair.
  std::vector<int32_t> pair_of_input(ne);
  std::vector<int32_t>& compact_src = a[HECTOR_GRAPH_COMPACT_SRC];
  std::vector<int32_t>& compact_offsets = a[HECTOR_GRAPH_COMPACT_OFFSETS];
  compact_offsets.assign(static_cast<size_t>(r) + 1, 0);
  {
    int64_t pairs = 0;
    for (size_t i = 0; i < ne; ++i) {
      const int32_t cur = by_type_src[i];
      if (i == 0 || ety[cur] != ety[by_type_src[i - 1]] || src[cur] != src[by_type_src[i - 1]]) {
        ++pairs;
        ++compact_offsets[static_cast<size_t>(ety[cur]) + 1];
      }
    }
    compact_src.resize(static_cast<size_t>(pairs));
    int32_t p = -1;
    for (size_t i = 0; i < ne; ++i) {
      const int32_t cur = by_type_src[i];
      if (i == 0 || ety[cur] != ety[by_type_src[i - 1]] || src[cur] != src[by_type_src[i - 1]])
        compact_src[static_cast<size_t>(++p)] = src[cur];
      pair_of_input[static_cast<size_t>(cur)] = p;
    }
    for (size_t j = 0; j < static_cast<size_t>(r); ++j) compact_offsets[j + 1] += compact_offsets[j];
    g.sizes.num_pairs = pairs;
  }

  // CSR order (dst, etype, src), reusing by_src; then canonical order.
  std::vector<int32_t>& csr_order = by_src;
  counting_pass(by_type_src.data(), dst, n, csr_order.data(), a[HECTOR_GRAPH_CSR_ROW_PTR]);
  std::vector<int32_t>& edge_perm = a[HECTOR_GRAPH_EDGE_PERM];
  edge_perm.resize(ne);
  counting_pass(csr_order.data(), ety, r, edge_perm.data(), a[HECTOR_GRAPH_ETYPE_OFFSETS]);

  // Canonical id of each input edge, reusing by_type_src.
  std::vector<int32_t>& canonical_of_input = by_type_src;
  for (size_t c = 0; c < ne; ++c) canonical_of_input[static_cast<size_t>(edge_perm[c])] = static_cast<int32_t>(c);

  std::vector<int32_t>& edge_src = a[HECTOR_GRAPH_EDGE_SRC];
  std::vector<int32_t>& edge_dst = a[HECTOR_GRAPH_EDGE_DST];
  std::vector<int32_t>& edge_type = a[HECTOR_GRAPH_EDGE_TYPE];
  std::vector<int32_t>& compact_map = a[HECTOR_GRAPH_COMPACT_MAP];
  edge_src.resize(ne);
  edge_dst.resize(ne);
  edge_type.resize(ne);
  compact_map.resize(ne);
  for (size_t c = 0; c < ne; ++c) {
    const size_t i = static_cast<size_t>(edge_perm[c]);
    edge_src[c] = src[i];
    edge_dst[c] = dst[i];
    edge_type[c] = ety[i];
    compact_map[c] = pair_of_input[i];
  }

  std::vector<int32_t>& csr_src = a[HECTOR_GRAPH_CSR_SRC];
  std::vector<int32_t>& csr_eid = a[HECTOR_GRAPH_CSR_EID];
  std::vector<int32_t>& csr_etype = a[HECTOR_GRAPH_CSR_ETYPE];
  csr_src.resize(ne);
  csr_eid.resize(ne);
  csr_etype.resize(ne);
  for (size_t k = 0; k < ne; ++k) {
    const size_t i = static_cast<size_t>(csr_order[k]);
    csr_src[k] = src[i];
    csr_eid[k] = canonical_of_input[i];
    csr_etype[k] = ety[i];
  }

  // Edges of one (etype, dst) are one run in canonical order: c_e = 1/run.
  g.edge_norm.resize(ne);
  for (size_t begin = 0; begin < ne;) {
    size_t end = begin + 1;
    while (end < ne && edge_type[end] == edge_type[begin] && edge_dst[end] == edge_dst[begin]) ++end;
    const float norm = 1.0f / static_cast<float>(end - begin);
    for (size_t c = begin; c < end; ++c) g.edge_norm[c] = norm;
    begin = end;
  }
  return HECTOR_OK;
}

}  // namespace

int preprocess_graph(const hector_graph_input& in, hector_graph& g) {
  // std::vector reports allocation failure by throwing; nothing may escape
  // the C ABI.
  try {
    return build(in, g);
  } catch (const std::bad_alloc&) {
    return fail(HECTOR_ERROR_OUT_OF_MEMORY,
                "hector_graph_build: out of host memory (N = %" PRId64 ", E = %" PRId64 ")",
                in.node_type.length, in.src.length);
  } catch (const std::length_error&) {
    return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_graph_build: arrays too large to allocate");
  }
}

}  // namespace hector
