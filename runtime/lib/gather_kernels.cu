// Zero-copy gather kernels: dst[i] = src[index[i]], rows read straight out of
// mapped host memory over PCIe.
//
// Three families, all launched with kThreads threads per block:
//  - aligned<G>: src, dst, strides and row size are multiples of 16 bytes.
//    G lanes copy one row with 16-byte loads and stores, starting on the
//    row's first 128-byte boundary and wrapping inside the row (circular
//    shift), so each 32-lane load covers whole 128-byte lines.
//  - general<G>: any alignment. The same circularly shifted, 16-byte aligned
//    loads cover the row's 16-byte hull; chunks land in shared memory at
//    their natural offsets, and the lanes then write the row's bytes out with
//    16-byte stores aligned to dst (a funnel shift realigns the bytes).
//  - naive<E>: one thread per E-byte element, the textbook zero-copy gather,
//    kept for benchmarks and as a second opinion in tests.
// G (lanes per row) is chosen on the host from the row size: small rows share
// a warp, rows of 32 chunks and more get a whole warp.
// Bad indices never reach memory: the row is zero-filled and the lowest bad
// position is recorded in the call's status word (see gather_params.h).
// An optional scatter list (dst_index) sends row i to output row
// dst_index[i]: callers sort the indices and scatter back, so that the rows
// are read in address order.
#include <stdint.h>

#include "gather_params.h"
#include "gather_plan.h"

namespace hector {
namespace {

template <typename Idx>
__device__ __forceinline__ int64_t row_of(const GatherParams& p, int64_t i, bool* ok) {
  int64_t r = static_cast<int64_t>(reinterpret_cast<const Idx*>(p.index)[i]);
  if (r < 0 && p.wrap_negative) r += p.src_rows;
  *ok = r >= 0 && r < p.src_rows;
  return r;
}

// A bad row's output is zeroed so that the result never holds stale memory.
__device__ __forceinline__ void zero_row(uint64_t dst, int64_t bytes, int c0, int G) {
  for (int64_t b = c0; b < bytes; b += G) reinterpret_cast<uint8_t*>(dst)[b] = 0;
}

__device__ __forceinline__ void report_bad(const GatherParams& p, uint64_t code) {
  atomicMax(reinterpret_cast<unsigned long long*>(p.status),
            static_cast<unsigned long long>(p.tag | (kPosMask - code)));
}

// Output row of gathered row i: i, or dst_index[i] when a scatter list is
// given. A scatter entry outside [0, n_index) is reported and the row
// skipped, so nothing is ever written out of bounds.
__device__ __forceinline__ bool out_row(const GatherParams& p, int64_t i, int64_t* row) {
  if (!p.dst_index) {
    *row = i;
    return true;
  }
  *row = reinterpret_cast<const int64_t*>(p.dst_index)[i];
  return *row >= 0 && *row < p.n_index;
}

// Resolves row i's source row and output address; false (after reporting
// and, for a bad source index, zeroing the output row) if the row is skipped.
template <typename Idx>
__device__ __forceinline__ bool resolve(const GatherParams& p, int64_t i, int c0, int G,
                                        int64_t* r, uint64_t* dst) {
  int64_t o;
  if (!out_row(p, i, &o)) {
    if (c0 == 0) report_bad(p, kBadDstFlag | static_cast<uint64_t>(i));
    return false;
  }
  *dst = p.dst + static_cast<uint64_t>(o * p.dst_stride);
  bool ok;
  *r = row_of<Idx>(p, i, &ok);
  if (!ok) {
    if (c0 == 0) report_bad(p, static_cast<uint64_t>(i));
    zero_row(*dst, p.row_bytes, c0, G);
  }
  return ok;
}

// 16-byte read-only load.
__device__ __forceinline__ uint4 load16(uint64_t addr) {
  return __ldg(reinterpret_cast<const uint4*>(addr));
}

// Mask of the G lanes that share this thread's row.
template <int G>
__device__ __forceinline__ unsigned group_mask() {
  if constexpr (G == 32) {
    return 0xffffffffu;
  } else {
    const unsigned lane = threadIdx.x & 31u;
    return ((1u << G) - 1u) << (lane / G * G);
  }
}

template <int G, typename Idx>
__device__ void gather_aligned(const GatherParams& p) {
  constexpr int U = unroll_for(G);
  const int c0 = threadIdx.x % G;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * (kThreads / G);
  for (int64_t g = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / G;
       g < p.n_index; g += stride) {
    int64_t r;
    uint64_t dst;
    if (!resolve<Idx>(p, g, c0, G, &r, &dst)) continue;
    const uint64_t src = p.src + static_cast<uint64_t>(r * p.src_stride);
    const RowPlan plan = plan_span(src, src + static_cast<uint64_t>(p.row_bytes));
    for (uint32_t base = 0; base < plan.chunks; base += G * U) {
      // All loads first: U independent PCIe reads in flight per lane.
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint32_t c = base + c0 + u * G;
        if (c < plan.chunks) v[u] = load16(src + kChunk * plan_chunk(plan, c));
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint32_t c = base + c0 + u * G;
        if (c < plan.chunks)
          *reinterpret_cast<uint4*>(dst + kChunk * plan_chunk(plan, c)) = v[u];
      }
    }
  }
}

// 16 bytes starting at any byte offset of a 16-byte aligned shared buffer.
// Reads one word past the 16 bytes when unaligned (the buffer is padded).
__device__ __forceinline__ uint4 read16_unaligned(const uint8_t* buf, uint32_t off) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(buf) + (off >> 2);
  const uint32_t sh = (off & 3u) * 8u;
  if (sh == 0) return make_uint4(w[0], w[1], w[2], w[3]);
  return make_uint4(__funnelshift_r(w[0], w[1], sh), __funnelshift_r(w[1], w[2], sh),
                    __funnelshift_r(w[2], w[3], sh), __funnelshift_r(w[3], w[4], sh));
}

// Writes row bytes [r0, r1) to dst from the staging buffer, where row byte b
// sits at buf[b + delta]: single bytes up to dst's next 16-byte boundary,
// then aligned 16-byte stores, then single bytes.
__device__ __forceinline__ void write_span(uint64_t dst, int64_t r0, int64_t r1,
                                           const uint8_t* buf, int64_t delta, int c0,
                                           int G) {
  uint8_t* out = reinterpret_cast<uint8_t*>(dst);
  const int64_t len = r1 - r0;
  const int64_t head = min(len, static_cast<int64_t>((16u - ((dst + r0) & 15u)) & 15u));
  const int64_t body = (len - head) / 16;
  const int64_t tail_at = r0 + head + 16 * body;
  for (int64_t b = c0; b < head; b += G) out[r0 + b] = buf[r0 + b + delta];
  for (int64_t q = c0; q < body; q += G) {
    const int64_t b = r0 + head + 16 * q;
    *reinterpret_cast<uint4*>(out + b) =
        read16_unaligned(buf, static_cast<uint32_t>(b + delta));
  }
  for (int64_t b = tail_at + c0; b < r1; b += G) out[b] = buf[b + delta];
}

template <int G, typename Idx>
__device__ void gather_general(const GatherParams& p) {
  constexpr int U = unroll_for(G);
  constexpr uint32_t kTileChunks = general_tile_chunks(G);
  constexpr uint64_t kTileBytes = uint64_t(kTileChunks) * kChunk;
  extern __shared__ uint4 smem[];
  uint8_t* buf = reinterpret_cast<uint8_t*>(smem) + (threadIdx.x / G) * general_buf_bytes(G);
  const int c0 = threadIdx.x % G;
  const unsigned mask = group_mask<G>();
  const int64_t rb = p.row_bytes;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * (kThreads / G);
  // Every lane of a group has the same g and row, so the group stays
  // converged through the __syncwarp(mask) calls below.
  for (int64_t g = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / G;
       g < p.n_index; g += stride) {
    int64_t r;
    uint64_t dst;
    if (!resolve<Idx>(p, g, c0, G, &r, &dst)) continue;
    const uint64_t a = p.src + static_cast<uint64_t>(r * p.src_stride);
    const RowPlan whole = plan_row(a, static_cast<uint64_t>(rb));
    const uint64_t hull_end = whole.hull + uint64_t(whole.chunks) * kChunk;
    // Rows longer than a tile go in tiles cut at 128-byte line boundaries;
    // each tile is read with its own circular shift.
    for (uint64_t t0 = whole.hull; t0 < hull_end;) {
      const uint64_t t1 = whole.chunks <= kTileChunks
                              ? hull_end
                              : min(hull_end, (t0 & ~(kLine - 1)) + kTileBytes);
      const RowPlan tp = plan_span(t0, t1);
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint32_t c = c0 + u * G;
        if (c < tp.chunks) v[u] = load16(t0 + kChunk * plan_chunk(tp, c));
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint32_t c = c0 + u * G;
        if (c < tp.chunks)
          *reinterpret_cast<uint4*>(buf + kChunk * plan_chunk(tp, c)) = v[u];
      }
      __syncwarp(mask);
      const int64_t delta = static_cast<int64_t>(a) - static_cast<int64_t>(t0);
      const int64_t r0 = max(int64_t(0), -delta);
      const int64_t r1 = min(rb, static_cast<int64_t>(t1 - a));
      write_span(dst, r0, r1, buf, delta, c0, G);
      __syncwarp(mask);  // the buffer is reused by the next tile / row
      t0 = t1;
    }
  }
}

template <int E> struct ElemType;
template <> struct ElemType<1> { using T = uint8_t; };
template <> struct ElemType<2> { using T = uint16_t; };
template <> struct ElemType<4> { using T = uint32_t; };
template <> struct ElemType<8> { using T = uint64_t; };

template <int E, typename Idx>
__device__ void gather_naive(const GatherParams& p) {
  using T = typename ElemType<E>::T;
  const int64_t per_row = p.row_bytes / E;
  const int64_t total = p.n_index * per_row;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t i = t / per_row;
    const int64_t k = t - i * per_row;
    int64_t o;
    if (!out_row(p, i, &o)) {
      if (k == 0) report_bad(p, kBadDstFlag | static_cast<uint64_t>(i));
      continue;
    }
    bool ok;
    const int64_t r = row_of<Idx>(p, i, &ok);
    T* out = reinterpret_cast<T*>(p.dst + static_cast<uint64_t>(o * p.dst_stride)) + k;
    if (!ok) {
      if (k == 0) report_bad(p, static_cast<uint64_t>(i));
      *out = 0;
      continue;
    }
    *out = reinterpret_cast<const T*>(p.src + static_cast<uint64_t>(r * p.src_stride))[k];
  }
}

}  // namespace
}  // namespace hector

using hector::GatherParams;
using hector::kThreads;

// Unmangled entry points, looked up by name from the host (gather.cpp).
#define HECTOR_ROW_KERNELS(G)                                                         \
  extern "C" __global__ void __launch_bounds__(kThreads)                              \
      hector_aligned_g##G##_i32(GatherParams p) { hector::gather_aligned<G, int32_t>(p); } \
  extern "C" __global__ void __launch_bounds__(kThreads)                              \
      hector_aligned_g##G##_i64(GatherParams p) { hector::gather_aligned<G, int64_t>(p); } \
  extern "C" __global__ void __launch_bounds__(kThreads)                              \
      hector_general_g##G##_i32(GatherParams p) { hector::gather_general<G, int32_t>(p); } \
  extern "C" __global__ void __launch_bounds__(kThreads)                              \
      hector_general_g##G##_i64(GatherParams p) { hector::gather_general<G, int64_t>(p); }

HECTOR_ROW_KERNELS(1)
HECTOR_ROW_KERNELS(2)
HECTOR_ROW_KERNELS(4)
HECTOR_ROW_KERNELS(8)
HECTOR_ROW_KERNELS(16)
HECTOR_ROW_KERNELS(32)

#define HECTOR_NAIVE_KERNELS(E)                                                       \
  extern "C" __global__ void __launch_bounds__(kThreads)                              \
      hector_naive_e##E##_i32(GatherParams p) { hector::gather_naive<E, int32_t>(p); } \
  extern "C" __global__ void __launch_bounds__(kThreads)                              \
      hector_naive_e##E##_i64(GatherParams p) { hector::gather_naive<E, int64_t>(p); }

HECTOR_NAIVE_KERNELS(1)
HECTOR_NAIVE_KERNELS(2)
HECTOR_NAIVE_KERNELS(4)
HECTOR_NAIVE_KERNELS(8)
