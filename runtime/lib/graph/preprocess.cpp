// Per-graph preprocessing (docs/compilation.md, "Graph preprocessing").
//
// All orderings come from stable LSD radix sorts and counting passes, so the
// build is O(N + E + T + R) with no global comparison sort:
//
//   1. edges, input order  --radix by dst-->  grouped by destination
//   2. each destination's run --by (etype, src)--> CSR slot order
//      (insertion sort for runs of at most kSmallRun edges, radix above)
//   3. CSR order --radix by etype--> canonical order (etype, dst, src); the
//      canonical id of each CSR slot is the running count of its edge type
//   4. canonical order, one edge type at a time: the type's sources marked in
//      a bitmap and read back in order are its compact pairs (radix sort of
//      keys etype * N + src instead when R * N / 64 would outweigh E); then
//      compact_map, and pair_eid by a counting sort of the type's edges by
//      pair id
//
// Records carry their keys and payload, so each pass reads sequentially and
// writes into at most 2^kMaxDigitBits buckets, and every output array but
// pair_eid is written sequentially in its own order. Nothing else is gathered
// or scattered at random over an E-sized array (on a 21 M-edge graph one such
// pass costs about as much as a whole radix sort); random accesses go only to
// N-, R- or N/64-sized arrays. pair_eid is the one scatter: each edge type's
// edges, sorted by destination, regrouped by source within the type's range.
//
// Every step is stable and the first starts from the input order, so ties
// (duplicate edges) keep their input order, as the contract asks. CSR slots
// of one destination are in canonical order (edge type, then source), which
// keeps the edges of one type together inside a row.
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
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
  if (n > (std::numeric_limits<size_t>::max() - kHuge) / size) throw std::bad_alloc();
  // Cache-line aligned at least, which the radix passes' line writes use.
  const size_t align = n * size >= kHuge ? kHuge : 64;
  const size_t bytes = (n * size + align - 1) / align * align;  // aligned_alloc wants a multiple
  void* p = std::aligned_alloc(align, bytes);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (align == kHuge) madvise(p, bytes, MADV_HUGEPAGE);  // only a hint: failure is harmless
#endif
  return p;
}

void free_bytes(void* p) { std::free(p); }

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();  // 2^31 - 1
// 2048 buckets: two passes cover 22-bit keys (2 M nodes), and the buckets'
// line buffers (128 KiB for 16-byte records) stay in L2.
constexpr int kMaxDigitBits = 11;
constexpr size_t kLineBytes = 64;
// Runs of at most this many edges are sorted by insertion (fewer than
// kSmallRun^2 / 2 moves per run, so O(E) overall); longer runs by radix.
constexpr size_t kSmallRun = 16;

struct Edge {
  int32_t src, dst, etype;
  int32_t id;  // input index until the canonical order is known, then canonical id
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

// Calls f with the array's data as const int32_t* or const int64_t*.
template <typename F>
decltype(auto) with_ids(const hector_index_array& a, F&& f) {
  if (a.elem_bytes == 4) return f(static_cast<const int32_t*>(a.data));
  return f(static_cast<const int64_t*>(a.data));
}

// The message for the first id of `a` outside [0, upper), or OK if none.
// `kind` and `bound` name the range.
int check_ids(const hector_index_array& a, int64_t upper, const char* what, const char* kind,
              const char* bound) {
  return with_ids(a, [&](const auto* p) {
    for (int64_t i = 0; i < a.length; ++i) {
      const int64_t v = static_cast<int64_t>(p[i]);
      if (v < 0 || v >= upper)
        return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                    "hector_graph_build: %s[%" PRId64 "] = %" PRId64
                    " is out of range: %s must lie in [0, %" PRId64 ") (%s = %" PRId64 ")",
                    what, i, v, kind, upper, bound, upper);
    }
    return static_cast<int>(HECTOR_OK);
  });
}

// Fills edges[i] = {src[i], dst[i], etype[i], i} in one pass over the three
// inputs; returns false if any id is out of range (the caller then finds and
// reports the first one).
bool load_edges(const hector_graph_input& in, int64_t n, int64_t r, Buffer<Edge>& edges) {
  return with_ids(in.src, [&](const auto* s) {
    return with_ids(in.dst, [&](const auto* d) {
      return with_ids(in.etype, [&](const auto* t) {
        const uint64_t un = static_cast<uint64_t>(n), ur = static_cast<uint64_t>(r);
        bool ok = true;
        for (size_t i = 0; i < edges.size(); ++i) {
          const int64_t sv = s[i], dv = d[i], tv = t[i];
          // One unsigned compare per id also rejects negatives.
          ok &= static_cast<uint64_t>(sv) < un && static_cast<uint64_t>(dv) < un &&
                static_cast<uint64_t>(tv) < ur;
          edges[i] = {static_cast<int32_t>(sv), static_cast<int32_t>(dv), static_cast<int32_t>(tv),
                      static_cast<int32_t>(i)};
        }
        return ok;
      });
    });
  });
}

int bit_width(uint64_t v) {
  int bits = 0;
  while (bits < 64 && (uint64_t(1) << bits) <= v) ++bits;
  return bits;
}

// One stable scatter of a radix pass: out[next[bucket(rec)]++] = rec.
//
// Writing straight to 2048 places at once misses the cache on every record
// (measured 3-4x slower than a copy on the development machine). Instead
// each bucket collects one cache line of records in a small buffer (software
// write combining) and writes whole lines; only a bucket's first and last
// lines, which it may share with its neighbours, are written partly.
template <typename Rec, typename Bucket>
void scatter(const Rec* in, Rec* out, size_t n, size_t buckets, std::vector<size_t>& next,
             Bucket bucket, std::vector<Rec>& lines) {
  constexpr size_t K = kLineBytes / sizeof(Rec);  // records per line
  const uintptr_t addr = reinterpret_cast<uintptr_t>(out);
  if (kLineBytes % sizeof(Rec) != 0 || addr % sizeof(Rec) != 0 || n < 4 * buckets * K) {
    for (size_t i = 0; i < n; ++i) out[next[bucket(in[i])]++] = in[i];
    return;
  }
  // Lane of out[pos] in its cache line. A line may start before out[0] (a
  // run inside a larger buffer) or before the bucket's first position: then
  // only the bucket's part of it is written.
  const size_t base = (addr / sizeof(Rec)) % K;
  const std::vector<size_t> begin(next);
  lines.resize(buckets * K);
  // Writes the buffered records of bucket j from its line's lane `lane`
  // (holding position pos) back to the line start, clipped to the bucket.
  auto flush = [&](size_t j, size_t pos, size_t lane) {
    const Rec* line = &lines[j * K];
    if (lane <= pos - begin[j]) {
      std::memcpy(out + (pos - lane), line, (lane + 1) * sizeof(Rec));
    } else {
      const size_t from = begin[j];
      std::memcpy(out + from, line + (lane - (pos - from)), (pos + 1 - from) * sizeof(Rec));
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const size_t j = bucket(in[i]);
    const size_t pos = next[j]++;
    const size_t lane = (base + pos) % K;
    lines[j * K + lane] = in[i];
    if (lane == K - 1) {
      if (pos - begin[j] >= K - 1)  // the common case: a whole line
        std::memcpy(out + (pos - (K - 1)), &lines[j * K], kLineBytes);
      else
        flush(j, pos, lane);
    }
  }
  for (size_t j = 0; j < buckets; ++j) {  // the partial last lines
    if (next[j] == begin[j]) continue;
    const size_t last = next[j] - 1, lane = (base + last) % K;
    if (lane != K - 1) flush(j, last, lane);
  }
}

// Stable LSD radix sort of the n records at `a` by key(rec), whose values lie
// in [0, range), with digits of at most max_bits; `b` is scratch of the same
// size. Returns a or b, whichever holds the result. All digit histograms come
// from one read, and a digit that puts every record in one bucket is skipped.
template <typename Rec, typename Key>
Rec* radix_sort(Rec* a, Rec* b, size_t n, uint64_t range, int max_bits, Key key,
                std::vector<size_t>& hist) {
  const int bits = range > 0 ? bit_width(range - 1) : 0;
  if (bits == 0 || n < 2) return a;
  const int passes = (bits + max_bits - 1) / max_bits;
  const int digit = (bits + passes - 1) / passes;
  const size_t buckets = size_t(1) << digit;
  const uint64_t mask = buckets - 1;
  hist.assign(static_cast<size_t>(passes) * buckets, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = key(a[i]);
    for (int p = 0; p < passes; ++p) ++hist[p * buckets + ((k >> (p * digit)) & mask)];
  }
  std::vector<size_t> next(buckets);
  std::vector<Rec> lines;
  for (int p = 0; p < passes; ++p) {
    const size_t* h = &hist[p * buckets];
    bool trivial = false;
    size_t sum = 0;
    for (size_t j = 0; j < buckets; ++j) {
      trivial |= h[j] == n;
      next[j] = sum;
      sum += h[j];
    }
    if (trivial) continue;
    const int shift = p * digit;
    scatter(a, b, n, buckets, next, [&](const Rec& x) { return (key(x) >> shift) & mask; }, lines);
    std::swap(a, b);
  }
  return a;
}

// radix_sort over whole buffers; the result ends in `recs`.
template <typename Rec, typename Key>
void radix_sort(Buffer<Rec>& recs, Buffer<Rec>& scratch, uint64_t range, Key key) {
  std::vector<size_t> hist;
  if (radix_sort(recs.data(), scratch.data(), recs.size(), range, kMaxDigitBits, key, hist) !=
      recs.data())
    recs.swap(scratch);
}

// offsets[k] = number of items with key(item) < k, for k in [0, range].
template <typename Key>
void offsets_of(size_t n, int64_t range, Key key, Buffer<int32_t>& offsets) {
  offsets.allocate(static_cast<size_t>(range) + 1);
  for (size_t k = 0; k <= static_cast<size_t>(range); ++k) offsets[k] = 0;
  for (size_t i = 0; i < n; ++i) ++offsets[static_cast<size_t>(key(i)) + 1];
  for (size_t k = 0; k < static_cast<size_t>(range); ++k) offsets[k + 1] += offsets[k];
}

// Compact pairs by radix sort of the keys etype * N + src (of type K:
// uint32_t when R * N fits, else uint64_t). For graphs whose R * N / 64 is
// large against E, where the bitmap of pairs_by_bitmap would cost too much.
template <typename K>
void pairs_by_sort(const Buffer<int32_t>& edge_src, const Buffer<int32_t>& edge_type, int64_t n,
                   int64_t r, hector_graph& g) {
  const size_t ne = edge_src.size();
  const K kn = static_cast<K>(n);
  Buffer<K> keys(ne), scratch(ne);
  for (size_t i = 0; i < ne; ++i)
    keys[i] = static_cast<K>(edge_type[i]) * kn + static_cast<K>(edge_src[i]);
  radix_sort(keys, scratch, static_cast<uint64_t>(r) * static_cast<uint64_t>(n),
             [](K k) { return static_cast<uint64_t>(k); });
  size_t pairs = 0;  // unique in place: keys[0 .. pairs)
  for (size_t i = 0; i < ne; ++i)
    if (pairs == 0 || keys[i] != keys[pairs - 1]) keys[pairs++] = keys[i];
  g.sizes.num_pairs = static_cast<int64_t>(pairs);
  Buffer<int32_t>& compact_src = g.i32[HECTOR_GRAPH_COMPACT_SRC];
  compact_src.allocate(pairs);
  for (size_t p = 0; p < pairs; ++p) compact_src[p] = static_cast<int32_t>(keys[p] % kn);
  offsets_of(pairs, r, [&](size_t p) { return keys[p] / kn; }, g.i32[HECTOR_GRAPH_COMPACT_OFFSETS]);
}

// Compact pairs of one edge type at a time: mark the sources of the type's
// canonical edges in an N-bit bitmap, then read the set bits back in order
// (clearing them). O(E + R * N / 64): the caller picks pairs_by_sort when
// the second term would dominate.
void pairs_by_bitmap(const Buffer<int32_t>& edge_src, const Buffer<int32_t>& etype_offsets,
                     int64_t n, int64_t r, hector_graph& g) {
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<uint64_t> bits(words, 0);
  Buffer<int32_t>& offsets = g.i32[HECTOR_GRAPH_COMPACT_OFFSETS];
  offsets.allocate(static_cast<size_t>(r) + 1);
  std::vector<int32_t> sources;  // compact_src, in order
  offsets[0] = 0;
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) {
    for (int32_t c = etype_offsets[k]; c < etype_offsets[k + 1]; ++c) {
      const uint32_t s = static_cast<uint32_t>(edge_src[static_cast<size_t>(c)]);
      bits[s >> 6] |= uint64_t(1) << (s & 63);
    }
    if (etype_offsets[k + 1] > etype_offsets[k]) {
      for (size_t w = 0; w < words; ++w) {
        for (uint64_t m = bits[w]; m; m &= m - 1)
          sources.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(m))));
        bits[w] = 0;
      }
    }
    offsets[k + 1] = static_cast<int32_t>(sources.size());
  }
  g.sizes.num_pairs = static_cast<int64_t>(sources.size());
  Buffer<int32_t>& compact_src = g.i32[HECTOR_GRAPH_COMPACT_SRC];
  compact_src.allocate(sources.size());
  if (!sources.empty()) std::memcpy(compact_src.data(), sources.data(), sources.size() * sizeof(int32_t));
}

// ---- sizes checked before allocating -------------------------------------------
//
// A request that can not fit (e.g. num_edge_types = 2^31 - 1 for a 5-node
// graph: several R-sized arrays, 16 GiB) is refused with OUT_OF_MEMORY before
// anything is allocated, instead of being zero-filled until the OOM killer
// ends the process. python/hector/_memory.py checks the same way first.

// Host memory the build needs at its peak, at least: all its outputs (+ the
// rank and next arrays of step 4), or, in step 3, the edge records and their
// scratch (16 bytes each), the CSR arrays, the node arrays and two R-sized
// arrays (etype_offsets and each type's next slot). compact_src (P <= E) is
// not counted. hector.graph.host_bytes mirrors it.
uint64_t peak_bytes(uint64_t n, uint64_t e, uint64_t t, uint64_t r) {
  const uint64_t outputs = 4 * (10 * e + 3 * n + 2 * r + t + 4);
  return std::max(outputs + 8 * n, 4 * (2 * r + 1) + 44 * e + 4 * (3 * n + t + 2));
}

constexpr uint64_t kSmallRequest = uint64_t(64) << 20;  // below: no lookups
constexpr uint64_t kUnlimited = uint64_t(1) << 60;

// The first number in `path` (a cgroup file), or -1.
int64_t read_number(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  unsigned long long v = 0;
  const int got = std::fscanf(f, "%llu", &v);
  std::fclose(f);
  return got == 1 && v < kUnlimited ? static_cast<int64_t>(v) : -1;
}

// Bytes of host memory available, and where the number comes from:
// $HECTOR_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix), else MemAvailable +
// SwapFree of /proc/meminfo, lowered to what the memory cgroup at
// /sys/fs/cgroup leaves. UINT64_MAX when unknown; false if the variable is
// malformed.
bool available_bytes(uint64_t& bytes, const char*& how) {
  bytes = UINT64_MAX;
  if (const char* env = std::getenv("HECTOR_MEMORY_LIMIT"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    int shift = 0;
    switch (end != env ? *end : '?') {
      case 'K': case 'k': shift = 10, ++end; break;
      case 'M': case 'm': shift = 20, ++end; break;
      case 'G': case 'g': shift = 30, ++end; break;
      case 'T': case 't': shift = 40, ++end; break;
      case '\0': break;
      default: return false;
    }
    if (end == env || *end != '\0' || v > (UINT64_MAX >> shift)) return false;
    bytes = static_cast<uint64_t>(v) << shift;
    how = "set by $HECTOR_MEMORY_LIMIT";
    return true;
  }
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kb = 0, avail = 0, swap = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = kb, found = true;
      else if (std::sscanf(line, "SwapFree: %llu kB", &kb) == 1) swap = kb;
    }
    std::fclose(f);
    if (found) {
      bytes = (static_cast<uint64_t>(avail) + static_cast<uint64_t>(swap)) * 1024;
      how = "MemAvailable + SwapFree in /proc/meminfo; $HECTOR_MEMORY_LIMIT overrides";
    }
  }
  for (auto [limit_file, usage_file] :
       {std::pair<const char*, const char*>{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const int64_t limit = read_number(limit_file), usage = read_number(usage_file);
    if (limit < 0 || usage < 0) continue;
    const uint64_t left = limit > usage ? static_cast<uint64_t>(limit - usage) : 0;
    if (left < bytes)
      bytes = left, how = "what the memory cgroup leaves; $HECTOR_MEMORY_LIMIT overrides";
    break;
  }
  return true;
}

int check_memory(int64_t n, int64_t e, int64_t t, int64_t r) {
  const uint64_t need = peak_bytes(static_cast<uint64_t>(n), static_cast<uint64_t>(e),
                                   static_cast<uint64_t>(t), static_cast<uint64_t>(r));
  if (need < kSmallRequest && !std::getenv("HECTOR_MEMORY_LIMIT")) return HECTOR_OK;
  uint64_t available = 0;
  const char* how = "unknown";
  if (!available_bytes(available, how))
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_graph_build: HECTOR_MEMORY_LIMIT = '%.64s' is not a number of bytes "
                "(optionally with a K, M, G or T suffix, e.g. 8G)",
                std::getenv("HECTOR_MEMORY_LIMIT"));
  if (need <= available) return HECTOR_OK;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  return fail(HECTOR_ERROR_OUT_OF_MEMORY,
              "hector_graph_build: a graph with N = %" PRId64 ", E = %" PRId64
              ", num_node_types = %" PRId64 ", num_edge_types = %" PRId64
              " needs at least %" PRIu64 " bytes (%.1f GiB) of host memory, more than the %" PRIu64
              " bytes (%.1f GiB) available (%s)",
              n, e, t, r, need, static_cast<double>(need) / kGiB, available,
              static_cast<double>(available) / kGiB, how);
}

int build(const hector_graph_input& in, hector_graph& g) {
  // Shapes first, then counts (and the memory they need), then values: the
  // cheapest checks first.
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
  if (int s = check_memory(n, e, t, r)) return s;
  if (int s = check_ids(in.node_type, t, "node_type", "node types", "num_node_types")) return s;
  Buffer<int32_t>* a = g.i32;
  const size_t nn = static_cast<size_t>(n), ne = static_cast<size_t>(e);
  Buffer<Edge> edges(ne);
  if (!load_edges(in, n, r, edges)) {
    if (int s = check_ids(in.src, n, "src", "node ids", "N")) return s;
    if (int s = check_ids(in.dst, n, "dst", "node ids", "N")) return s;
    if (int s = check_ids(in.etype, r, "etype", "edge types", "num_edge_types")) return s;
    return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE, "hector_graph_build: an edge id is out of range");
  }
  g.sizes = {n, e, t, r, 0};

  // Nodes grouped by type: one counting sort (N items, T buckets).
  Buffer<int32_t>& node_type = a[HECTOR_GRAPH_NODE_TYPE];
  node_type.allocate(nn);
  with_ids(in.node_type, [&](const auto* p) {
    for (size_t i = 0; i < nn; ++i) node_type[i] = static_cast<int32_t>(p[i]);
  });
  {
    Buffer<int32_t>& offsets = a[HECTOR_GRAPH_NTYPE_OFFSETS];
    offsets_of(nn, t, [&](size_t i) { return node_type[i]; }, offsets);
    std::vector<int32_t> next(offsets.data(), offsets.data() + t);
    Buffer<int32_t>& perm = a[HECTOR_GRAPH_NTYPE_PERM];
    perm.allocate(nn);
    for (size_t i = 0; i < nn; ++i)
      perm[static_cast<size_t>(next[static_cast<size_t>(node_type[i])]++)] = static_cast<int32_t>(i);
  }

  // 1. Group edges by destination; csr_row_ptr counts them.
  Buffer<Edge> scratch(ne);
  const uint64_t un = static_cast<uint64_t>(n);
  radix_sort(edges, scratch, un, [](const Edge& x) { return static_cast<uint64_t>(x.dst); });
  Buffer<int32_t>& row_ptr = a[HECTOR_GRAPH_CSR_ROW_PTR];
  offsets_of(ne, n, [&](size_t k) { return edges[k].dst; }, row_ptr);

  // 2. Sort each destination's run by (etype, src), stably.
  {
    // (etype, src) as one number: one compare per step.
    auto order = [](const Edge& x) {
      return static_cast<uint64_t>(x.etype) << 32 | static_cast<uint32_t>(x.src);
    };
    std::vector<size_t> hist;
    for (size_t v = 0; v < nn; ++v) {
      Edge* run = edges.data() + row_ptr[v];
      const size_t len = static_cast<size_t>(row_ptr[v + 1] - row_ptr[v]);
      if (len <= kSmallRun) {
        for (size_t i = 1; i < len; ++i) {
          const Edge x = run[i];
          const uint64_t kx = order(x);
          size_t j = i;
          for (; j > 0 && kx < order(run[j - 1]); --j) run[j] = run[j - 1];
          run[j] = x;
        }
        continue;
      }
      uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
      auto key = [un](const Edge& x) {
        return static_cast<uint64_t>(x.etype) * un + static_cast<uint64_t>(x.src);
      };
      for (size_t i = 0; i < len; ++i) lo = std::min(lo, key(run[i])), hi = std::max(hi, key(run[i]));
      // Digits sized to the run, so a short run pays for no big histogram.
      const int max_bits = std::max(4, std::min(kMaxDigitBits, bit_width(len)));
      Edge* tmp = scratch.data() + row_ptr[v];
      Edge* out = radix_sort(run, tmp, len, hi - lo + 1, max_bits,
                             [&](const Edge& x) { return key(x) - lo; }, hist);
      if (out != run) std::memcpy(run, out, len * sizeof(Edge));
    }
  }

  // 3. CSR slots, and the canonical order: a stable sort of the slots by
  // edge type puts the j-th slot of type r at canonical id
  // etype_offsets[r] + j.
  Buffer<int32_t>& etype_offsets = a[HECTOR_GRAPH_ETYPE_OFFSETS];
  offsets_of(ne, r, [&](size_t k) { return edges[k].etype; }, etype_offsets);
  {
    Buffer<int32_t>& csr_src = a[HECTOR_GRAPH_CSR_SRC];
    Buffer<int32_t>& csr_eid = a[HECTOR_GRAPH_CSR_EID];
    Buffer<int32_t>& csr_etype = a[HECTOR_GRAPH_CSR_ETYPE];
    for (Buffer<int32_t>* b : {&csr_src, &csr_eid, &csr_etype}) b->allocate(ne);
    std::vector<int32_t> next(etype_offsets.data(), etype_offsets.data() + r);
    for (size_t k = 0; k < ne; ++k) {
      csr_src[k] = edges[k].src;
      csr_etype[k] = edges[k].etype;
      csr_eid[k] = next[static_cast<size_t>(edges[k].etype)]++;
    }
  }
  radix_sort(edges, scratch, static_cast<uint64_t>(r),
             [](const Edge& x) { return static_cast<uint64_t>(x.etype); });
  scratch.release();
  Buffer<int32_t>& edge_src = a[HECTOR_GRAPH_EDGE_SRC];
  Buffer<int32_t>& edge_dst = a[HECTOR_GRAPH_EDGE_DST];
  Buffer<int32_t>& edge_type = a[HECTOR_GRAPH_EDGE_TYPE];
  Buffer<int32_t>& edge_perm = a[HECTOR_GRAPH_EDGE_PERM];
  for (Buffer<int32_t>* b : {&edge_src, &edge_dst, &edge_type, &edge_perm}) b->allocate(ne);
  for (size_t c = 0; c < ne; ++c) {
    const Edge& x = edges[c];
    edge_src[c] = x.src;
    edge_dst[c] = x.dst;
    edge_type[c] = x.etype;
    edge_perm[c] = x.id;
  }
  edges.release();

  // Edges of one (etype, dst) are one run in canonical order: c_e = 1/run.
  g.edge_norm.allocate(ne);
  for (size_t begin = 0; begin < ne;) {
    size_t end = begin + 1;
    while (end < ne && edge_type[end] == edge_type[begin] && edge_dst[end] == edge_dst[begin]) ++end;
    const float norm = 1.0f / static_cast<float>(end - begin);
    for (size_t c = begin; c < end; ++c) g.edge_norm[c] = norm;
    begin = end;
  }

  // 4. Compact pairs, then compact_map and pair_eid one edge type at a time.
  // rank[s] is the pair id of (s, type). Only entries set for this type are
  // read (every source of a type's edges has a pair of that type), so rank
  // needs no reset. pair_eid is a counting sort of the type's edges by pair
  // id: the type's pairs hold exactly its edges, so their slots are the
  // type's canonical range, and next[p - first pair] counts a pair's edges,
  // then holds its next free slot.
  const double bitmap_words = static_cast<double>(r) * (static_cast<double>(n) / 64 + 1);
  if (bitmap_words <= 4.0 * static_cast<double>(ne) + 4096)
    pairs_by_bitmap(edge_src, etype_offsets, n, r, g);
  else if (static_cast<uint64_t>(r) * un <= (uint64_t(1) << 32))
    pairs_by_sort<uint32_t>(edge_src, edge_type, n, r, g);
  else
    pairs_by_sort<uint64_t>(edge_src, edge_type, n, r, g);
  {
    const Buffer<int32_t>& compact_src = a[HECTOR_GRAPH_COMPACT_SRC];
    const Buffer<int32_t>& compact_offsets = a[HECTOR_GRAPH_COMPACT_OFFSETS];
    Buffer<int32_t>& compact_map = a[HECTOR_GRAPH_COMPACT_MAP];
    Buffer<int32_t>& pair_eid = a[HECTOR_GRAPH_PAIR_EID];
    compact_map.allocate(ne);
    pair_eid.allocate(ne);
    Buffer<int32_t> rank(nn), next(nn);  // a type has at most N pairs
    for (size_t k = 0; k < static_cast<size_t>(r); ++k) {
      const int32_t first = compact_offsets[k], last = compact_offsets[k + 1];
      const int32_t begin = etype_offsets[k], end = etype_offsets[k + 1];
      for (int32_t p = first; p < last; ++p) {
        rank[static_cast<size_t>(compact_src[static_cast<size_t>(p)])] = p;
        next[static_cast<size_t>(p - first)] = 0;
      }
      for (int32_t c = begin; c < end; ++c) {
        const int32_t p = rank[static_cast<size_t>(edge_src[static_cast<size_t>(c)])];
        compact_map[static_cast<size_t>(c)] = p;
        ++next[static_cast<size_t>(p - first)];
      }
      int32_t slot = begin;
      for (int32_t p = first; p < last; ++p) {
        const int32_t count = next[static_cast<size_t>(p - first)];
        next[static_cast<size_t>(p - first)] = slot;
        slot += count;
      }
      for (int32_t c = begin; c < end; ++c) {
        int32_t& to = next[static_cast<size_t>(compact_map[static_cast<size_t>(c)] - first)];
        pair_eid[static_cast<size_t>(to++)] = c;
      }
    }
  }
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
