// Per-graph preprocessing (docs/compilation.md, "Graph preprocessing").
//
// Every ordering comes from stable LSD radix sorts of edge records, so the
// build is O(N + E + T + R) with no comparison sort. Records carry their keys
// and payload: each pass reads sequentially and writes into at most 2^11
// buckets, and every output array is written sequentially in its own order.
// Nothing is gathered or scattered at random over an E-sized array: on a
// 21 M-edge graph one such random pass costs about as much as eight radix
// passes.
//
//   input order --by src, etype--> (etype, src)        compact pairs: pair ids
//               --by dst-->        (dst, etype, src)
//               --by etype-->      (etype, dst, src)   canonical order
//               --by dst-->        (dst, etype, src)   CSR slots (canonical ids)
//
// Every pass is stable and the first starts from the input order, so ties
// (duplicate edges) keep their input order, as the contract asks. CSR slots
// of one destination are in canonical order (edge type, then source), which
// keeps the edges of one type together inside a row.
#include <sys/mman.h>

#include <cinttypes>
#include <cstdlib>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "../error.h"
#include "graph_impl.h"

namespace hector {

void* allocate_bytes(size_t n, size_t size) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (n > std::numeric_limits<size_t>::max() / size) throw std::bad_alloc();
  size_t bytes = n * size;
  void* p = nullptr;
  if (bytes >= kHuge) {
    bytes = (bytes + kHuge - 1) / kHuge * kHuge;  // aligned_alloc wants a multiple
    p = std::aligned_alloc(kHuge, bytes);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, bytes, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  } else {
    p = std::malloc(bytes);
  }
  if (!p) throw std::bad_alloc();
  return p;
}

void free_bytes(void* p) { std::free(p); }

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();  // 2^31 - 1
constexpr int kMaxDigitBits = 11;  // 2048 buckets: the write streams stay in cache

struct Edge {
  int32_t src, dst, etype;
  int32_t id;    // input index until the canonical order is known, then canonical id
  int32_t pair;  // compact pair id
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

// Stores ids through store(i, value) while checking that each lies in
// [0, upper); the message names the first offending index. `kind` and
// `bound` name the range.
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
// [0, range); `scratch` has the same size. Digits have at most
// kMaxDigitBits; all digit histograms come from one read, and a digit that
// puts every record in one bucket is skipped.
void radix_sort(Buffer<Edge>& edges, Buffer<Edge>& scratch, int32_t Edge::*key, int64_t range) {
  int bits = 0;
  while (bits < 32 && (int64_t(1) << bits) < range) ++bits;
  const size_t n = edges.size();
  if (bits == 0 || n < 2) return;
  const int passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  const int digit = (bits + passes - 1) / passes;
  const size_t buckets = size_t(1) << digit;
  const uint32_t mask = static_cast<uint32_t>(buckets - 1);
  std::vector<size_t> hist(static_cast<size_t>(passes) * buckets, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = static_cast<uint32_t>(edges[i].*key);
    for (int p = 0; p < passes; ++p) ++hist[p * buckets + ((k >> (p * digit)) & mask)];
  }
  for (int p = 0; p < passes; ++p) {
    size_t* next = &hist[p * buckets];
    bool trivial = false;
    size_t sum = 0;
    for (size_t b = 0; b < buckets; ++b) {
      trivial |= next[b] == n;
      const size_t count = next[b];
      next[b] = sum;  // from here on: where the bucket's next record goes
      sum += count;
    }
    if (trivial) continue;
    const int shift = p * digit;
    const Edge* in = edges.data();
    Edge* out = scratch.data();
    for (size_t i = 0; i < n; ++i) out[next[(static_cast<uint32_t>(in[i].*key) >> shift) & mask]++] = in[i];
    edges.swap(scratch);
  }
}

// offsets[k] = number of items with key(item) < k, for k in [0, range].
template <typename Key>
void offsets_of(size_t n, int64_t range, Key key, Buffer<int32_t>& offsets) {
  offsets.allocate(static_cast<size_t>(range) + 1);
  for (size_t k = 0; k <= static_cast<size_t>(range); ++k) offsets[k] = 0;
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
                "hector_graph_build: mismatched edge arrays: src has %" PRId64
                " elements, dst %" PRId64 ", etype %" PRId64 "; all must have E",
                e, in.dst.length, in.etype.length);
  for (auto [what, v] : {std::pair<const char*, int64_t>{"num_node_types", t}, {"num_edge_types", r}}) {
    if (v < 0)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_graph_build: %s is negative (%" PRId64 ")",
                  what, v);
    if (v > kMaxCount)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "hector_graph_build: %s is %" PRId64 "; at most 2^31 - 1 is supported", what, v);
  }

  Buffer<int32_t>* a = g.i32;
  const size_t nn = static_cast<size_t>(n), ne = static_cast<size_t>(e);
  Buffer<int32_t>& node_type = a[HECTOR_GRAPH_NODE_TYPE];
  node_type.allocate(nn);
  Buffer<Edge> edges(ne);
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
    Buffer<int32_t>& offsets = a[HECTOR_GRAPH_NTYPE_OFFSETS];
    offsets_of(nn, t, [&](size_t i) { return node_type[i]; }, offsets);
    std::vector<int32_t> next(offsets.data(), offsets.data() + t);
    Buffer<int32_t>& perm = a[HECTOR_GRAPH_NTYPE_PERM];
    perm.allocate(nn);
    for (size_t i = 0; i < nn; ++i)
      perm[static_cast<size_t>(next[static_cast<size_t>(node_type[i])]++)] = static_cast<int32_t>(i);
  }

  // Compact pairs: in (etype, src) order each run of equal keys is one pair.
  Buffer<Edge> scratch(ne);
  radix_sort(edges, scratch, &Edge::src, n);
  radix_sort(edges, scratch, &Edge::etype, r);
  {
    int32_t pair = -1;
    for (size_t i = 0; i < ne; ++i) {
      if (i == 0 || edges[i].etype != edges[i - 1].etype || edges[i].src != edges[i - 1].src)
        ++pair;
      edges[i].pair = pair;
    }
    const size_t pairs = static_cast<size_t>(pair + 1);
    g.sizes.num_pairs = static_cast<int64_t>(pairs);
    Buffer<int32_t>& compact_src = a[HECTOR_GRAPH_COMPACT_SRC];
    compact_src.allocate(pairs);
    // Pair p starts at the first i with edges[i].pair == p.
    for (size_t i = 0; i < ne; ++i) compact_src[static_cast<size_t>(edges[i].pair)] = edges[i].src;
    Buffer<int32_t>& compact_offsets = a[HECTOR_GRAPH_COMPACT_OFFSETS];
    compact_offsets.allocate(static_cast<size_t>(r) + 1);
    for (size_t k = 0; k <= static_cast<size_t>(r); ++k) compact_offsets[k] = 0;
    for (size_t i = 0; i < ne; ++i)
      if (i == 0 || edges[i].pair != edges[i - 1].pair)
        ++compact_offsets[static_cast<size_t>(edges[i].etype) + 1];
    for (size_t k = 0; k < static_cast<size_t>(r); ++k) compact_offsets[k + 1] += compact_offsets[k];
  }

  // Canonical order (etype, dst, src): src-then-etype order sorted by dst
  // then etype is exactly it (stable passes), with input order on ties.
  radix_sort(edges, scratch, &Edge::dst, n);
  radix_sort(edges, scratch, &Edge::etype, r);
  Buffer<int32_t>& edge_src = a[HECTOR_GRAPH_EDGE_SRC];
  Buffer<int32_t>& edge_dst = a[HECTOR_GRAPH_EDGE_DST];
  Buffer<int32_t>& edge_type = a[HECTOR_GRAPH_EDGE_TYPE];
  Buffer<int32_t>& edge_perm = a[HECTOR_GRAPH_EDGE_PERM];
  Buffer<int32_t>& compact_map = a[HECTOR_GRAPH_COMPACT_MAP];
  for (Buffer<int32_t>* b : {&edge_src, &edge_dst, &edge_type, &edge_perm, &compact_map})
    b->allocate(ne);
  for (size_t c = 0; c < ne; ++c) {
    Edge& x = edges[c];
    edge_src[c] = x.src;
    edge_dst[c] = x.dst;
    edge_type[c] = x.etype;
    edge_perm[c] = x.id;
    compact_map[c] = x.pair;
    x.id = static_cast<int32_t>(c);  // from here on, ids are canonical
  }
  offsets_of(ne, r, [&](size_t c) { return edge_type[c]; }, a[HECTOR_GRAPH_ETYPE_OFFSETS]);

  // Edges of one (etype, dst) are one run in canonical order: c_e = 1/run.
  g.edge_norm.allocate(ne);
  for (size_t begin = 0; begin < ne;) {
    size_t end = begin + 1;
    while (end < ne && edge_type[end] == edge_type[begin] && edge_dst[end] == edge_dst[begin]) ++end;
    const float norm = 1.0f / static_cast<float>(end - begin);
    for (size_t c = begin; c < end; ++c) g.edge_norm[c] = norm;
    begin = end;
  }

  // CSR slots: canonical edges grouped by destination.
  radix_sort(edges, scratch, &Edge::dst, n);
  scratch.release();
  Buffer<int32_t>& csr_src = a[HECTOR_GRAPH_CSR_SRC];
  Buffer<int32_t>& csr_eid = a[HECTOR_GRAPH_CSR_EID];
  Buffer<int32_t>& csr_etype = a[HECTOR_GRAPH_CSR_ETYPE];
  for (Buffer<int32_t>* b : {&csr_src, &csr_eid, &csr_etype}) b->allocate(ne);
  for (size_t k = 0; k < ne; ++k) {
    csr_src[k] = edges[k].src;
    csr_eid[k] = edges[k].id;
    csr_etype[k] = edges[k].etype;
  }
  offsets_of(ne, n, [&](size_t k) { return edges[k].dst; }, a[HECTOR_GRAPH_CSR_ROW_PTR]);
  return HECTOR_OK;
}

}  // namespace

int preprocess_graph(const hector_graph_input& in, hector_graph& g) {
  // Allocation failures throw std::bad_alloc; nothing may escape the C ABI.
  try {
    return build(in, g);
  } catch (const std::bad_alloc&) {
    return fail(HECTOR_ERROR_OUT_OF_MEMORY,
                "hector_graph_build: out of host memory (N = %" PRId64 ", E = %" PRId64 ")",
                in.node_type.length, in.src.length);
  }
}

}  // namespace hector
