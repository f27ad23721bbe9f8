// Per-graph preprocessing (docs/compilation.md, "Graph preprocessing").
//
// Every ordering comes from stable LSD radix sorts of edge records
// {src, dst, etype, id}, so the build is O(N + E + T + R) with no comparison
// sort. Records travel with their keys: each pass reads sequentially and
// writes into at most 2^11 buckets, instead of gathering keys at random from
// E-sized arrays (which made a 21 M-edge graph 10x slower).
//
//   input order  --by src, dst, etype-->  (etype, dst, src)   canonical order
//   canonical    --by dst-->              (dst, etype, src)   CSR slots
//   CSR order    --by src, etype-->       (etype, src, ...)   compact pairs
//
// Every pass is stable and the first starts from the input order, so ties
// (duplicate edges) keep their input order, as the contract asks. CSR slots
// of one destination are in canonical order (edge type, then source), which
// keeps the edges of one type together inside a row.
#include <cinttypes>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>

#include "../error.h"
#include "graph_impl.h"

namespace hector {
namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();  // 2^31 - 1
constexpr int kMaxDigitBits = 11;  // 2048 buckets: write streams stay in cache/TLB

struct Edge {
  int32_t src, dst, etype;
  int32_t id;  // input index, then canonical id
};

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

// Stores ids through store(i, value) while checking each lies in [0, upper);
// the message names the first offending index. `kind` and `bound` describe
// the range.
template <typename T, typename Store>
int load_ids_as(const T* p, int64_t n, int64_t upper, const char* what, const char* kind,
                const char* bound, Store store) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(p[i]);
    if (v < 0 || v >= upper)
      return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                  "hector_graph_build: %s[%" PRId64 "] = %" PRId64
                  " is out of range: %s must lie in [0, %" PRId64 ") (%s = %" PRId64 ")",
                  what, i, v, kind, upper, bound, upper);
    store(static_cast<size_t>(i), static_cast<int32_t>(v));
  }
  return HECTOR_OK;
}

template <typename Store>
int load_ids(const hector_index_array& a, int64_t upper, const char* what, const char* kind,
             const char* bound, Store store) {
  if (a.elem_bytes == 4)
    return load_ids_as(static_cast<const int32_t*>(a.data), a.length, upper, what, kind, bound,
                       store);
  return load_ids_as(static_cast<const int64_t*>(a.data), a.length, upper, what, kind, bound,
                     store);
}

// Stable LSD radix sort of `edges` by the field `key`, whose values lie in
// [0, range); `scratch` has the same size. Digits of at most kMaxDigitBits;
// all digit histograms come from one read, and a digit that puts every
// record in one bucket is skipped.
void radix_sort(std::vector<Edge>& edges, std::vector<Edge>& scratch, int32_t Edge::*key,
                int64_t range) {
  int bits = 0;
  while (bits < 32 && (int64_t(1) << bits) < range) ++bits;
  if (bits == 0 || edges.size() < 2) return;
  const int passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  const int digit = (bits + passes - 1) / passes;
  const size_t buckets = size_t(1) << digit;
  const uint32_t mask = static_cast<uint32_t>(buckets - 1);
  std::vector<size_t> hist(static_cast<size_t>(passes) * buckets, 0);
  for (const Edge& e : edges) {
    const uint32_t k = static_cast<uint32_t>(e.*key);
    for (int p = 0; p < passes; ++p) ++hist[p * buckets + ((k >> (p * digit)) & mask)];
  }
  const size_t n = edges.size();
  for (int p = 0; p < passes; ++p) {
    size_t* h = &hist[p * buckets];
    bool trivial = false;
    size_t sum = 0;
    for (size_t b = 0; b < buckets; ++b) {
      trivial |= h[b] == n;
      const size_t count = h[b];
      h[b] = sum;  // now the bucket's next write position
      sum += count;
    }
    if (trivial) continue;
    const int shift = p * digit;
    Edge* out = scratch.data();
    for (const Edge& e : edges) out[h[(static_cast<uint32_t>(e.*key) >> shift) & mask]++] = e;
    edges.swap(scratch);
  }
}

// offsets[k] = number of items with key < k, for k in [0, range]; `key` is
// called for every item index.
template <typename Key>
void offsets_of(size_t n, int64_t range, Key key, std::vector<int32_t>& offsets) {
  offsets.assign(static_cast<size_t>(range) + 1, 0);
  for (size_t i = 0; i < n; ++i) ++offsets[static_cast<size_t>(key(i)) + 1];
  for (size_t k = 0; k < static_cast<size_t>(range); ++k) offsets[k + 1] += offsets[k];
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
  const size_t nn = static_cast<size_t>(n), ne = static_cast<size_t>(e);
  std::vector<int32_t>& node_type = a[HECTOR_GRAPH_NODE_TYPE];
  node_type.resize(nn);
  std::vector<Edge> edges(ne);
  if (int s = load_ids(in.node_type, t, "node_type", "node types", "num_node_types",
                       [&](size_t i, int32_t v) { node_type[i] = v; }))
    return s;
  if (int s = load_ids(in.src, n, "src", "node ids", "N",
                       [&](size_t i, int32_t v) { edges[i].src = v; }))
    return s;
  if (int s = load_ids(in.dst, n, "dst", "node ids", "N",
                       [&](size_t i, int32_t v) { edges[i].dst = v; }))
    return s;
  if (int s = load_ids(in.etype, r, "etype", "edge types", "num_edge_types",
                       [&](size_t i, int32_t v) { edges[i].etype = v; }))
    return s;
  for (size_t i = 0; i < ne; ++i) edges[i].id = static_cast<int32_t>(i);
  g.sizes = {n, e, t, r, 0};

  // Nodes grouped by type: one counting sort (N items, T buckets).
  {
    std::vector<int32_t>& offsets = a[HECTOR_GRAPH_NTYPE_OFFSETS];
    offsets_of(nn, t, [&](size_t i) { return node_type[i]; }, offsets);
    std::vector<int32_t> next(offsets.begin(), offsets.end() - 1);
    std::vector<int32_t>& perm = a[HECTOR_GRAPH_NTYPE_PERM];
    perm.resize(nn);
    for (size_t i = 0; i < nn; ++i) perm[static_cast<size_t>(next[static_cast<size_t>(node_type[i])]++)] = static_cast<int32_t>(i);
  }

  // Canonical order (etype, dst, src).
  std::vector<Edge> scratch(ne);
  radix_sort(edges, scratch, &Edge::src, n);
  radix_sort(edges, scratch, &Edge::dst, n);
  radix_sort(edges, scratch, &Edge::etype, r);
  std::vector<int32_t>& edge_src = a[HECTOR_GRAPH_EDGE_SRC];
  std::vector<int32_t>& edge_dst = a[HECTOR_GRAPH_EDGE_DST];
  std::vector<int32_t>& edge_type = a[HECTOR_GRAPH_EDGE_TYPE];
  std::vector<int32_t>& edge_perm = a[HECTOR_GRAPH_EDGE_PERM];
  edge_src.resize(ne);
  edge_dst.resize(ne);
  edge_type.resize(ne);
  edge_perm.resize(ne);
  for (size_t c = 0; c < ne; ++c) {
    Edge& x = edges[c];
    edge_src[c] = x.src;
    edge_dst[c] = x.dst;
    edge_type[c] = x.etype;
    edge_perm[c] = x.id;
    x.id = static_cast<int32_t>(c);  // from here on, ids are canonical
  }
  offsets_of(ne, r, [&](size_t c) { return edge_type[c]; }, a[HECTOR_GRAPH_ETYPE_OFFSETS]);

  // Edges of one (etype, dst) are one run in canonical order: c_e = 1/run.
  g.edge_norm.resize(ne);
  for (size_t begin = 0; begin < ne;) {
    size_t end = begin + 1;
    while (end < ne && edge_type[end] == edge_type[begin] && edge_dst[end] == edge_dst[begin]) ++end;
    const float norm = 1.0f / static_cast<float>(end - begin);
    for (size_t c = begin; c < end; ++c) g.edge_norm[c] = norm;
    begin = end;
  }

  // CSR slots: canonical edges grouped by destination.
  radix_sort(edges, scratch, &Edge::dst, n);
  std::vector<int32_t>& csr_src = a[HECTOR_GRAPH_CSR_SRC];
  std::vector<int32_t>& csr_eid = a[HECTOR_GRAPH_CSR_EID];
  std::vector<int32_t>& csr_etype = a[HECTOR_GRAPH_CSR_ETYPE];
  csr_src.resize(ne);
  csr_eid.resize(ne);
  csr_etype.resize(ne);
  for (size_t k = 0; k < ne; ++k) {
    csr_src[k] = edges[k].src;
    csr_eid[k] = edges[k].id;
    csr_etype[k] = edges[k].etype;
  }
  offsets_of(ne, n, [&](size_t k) { return edges[k].dst; }, a[HECTOR_GRAPH_CSR_ROW_PTR]);

  // Compact pairs: each run of equal (etype, src) is one pair.
  radix_sort(edges, scratch, &Edge::src, n);
  radix_sort(edges, scratch, &Edge::etype, r);
  scratch = std::vector<Edge>();
  auto starts_pair = [&](size_t i) {
    return i == 0 || edges[i].etype != edges[i - 1].etype || edges[i].src != edges[i - 1].src;
  };
  std::vector<int32_t>& compact_offsets = a[HECTOR_GRAPH_COMPACT_OFFSETS];
  compact_offsets.assign(static_cast<size_t>(r) + 1, 0);
  int32_t pairs = 0;
  for (size_t i = 0; i < ne; ++i) {
    if (starts_pair(i)) {
      ++pairs;
      ++compact_offsets[static_cast<size_t>(edges[i].etype) + 1];
    }
  }
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) compact_offsets[k + 1] += compact_offsets[k];
  std::vector<int32_t>& compact_src = a[HECTOR_GRAPH_COMPACT_SRC];
  std::vector<int32_t>& compact_map = a[HECTOR_GRAPH_COMPACT_MAP];
  compact_src.resize(static_cast<size_t>(pairs));
  compact_map.resize(ne);
  int32_t p = -1;
  for (size_t i = 0; i < ne; ++i) {
    if (starts_pair(i)) compact_src[static_cast<size_t>(++p)] = edges[i].src;
    compact_map[static_cast<size_t>(edges[i].id)] = p;
  }
  g.sizes.num_pairs = pairs;
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
