// Circular-shift alignment math, shared by the gather kernels (device) and the
// host code (hector_row_plan, tests). Kept dependency-free for both compilers.
#ifndef HECTOR_RUNTIME_GATHER_PLAN_H
#define HECTOR_RUNTIME_GATHER_PLAN_H

#include <stdint.h>

#ifdef __CUDACC__
#define HECTOR_HD __host__ __device__ __forceinline__
#else
#define HECTOR_HD inline
#endif

namespace hector {

// Bytes per vector load, and the PCIe / cache line the loads are aligned to.
constexpr uint64_t kChunk = 16;
constexpr uint64_t kLine = 128;

// Which 16-byte chunks of host memory one row occupies, and where its lane
// group starts reading.
struct RowPlan {
  uint64_t hull;   // first chunk address (row start rounded down to 16 B)
  uint32_t chunks; // chunks in [hull, row end rounded up to 16 B)
  uint32_t shift;  // chunk that lane 0 loads first
};

// Plan for the 16-byte aligned span [begin, end) (both multiples of 16).
// Lane 0 starts at the first 128-byte boundary inside the span, so each
// 32-lane load of 512 bytes covers whole 128-byte lines; the chunks before
// that boundary are picked up by the last lanes when the index wraps.
HECTOR_HD RowPlan plan_span(uint64_t begin, uint64_t end) {
  RowPlan p;
  p.hull = begin;
  p.chunks = static_cast<uint32_t>((end - begin) / kChunk);
  uint64_t first_line = (begin + kLine - 1) & ~(kLine - 1);
  uint64_t shift = (first_line - begin) / kChunk;
  // A span that never reaches a line boundary needs no shift.
  p.shift = (first_line >= end) ? 0u : static_cast<uint32_t>(shift);
  return p;
}

// Plan for a row of `bytes` bytes at any address.
HECTOR_HD RowPlan plan_row(uint64_t addr, uint64_t bytes) {
  if (bytes == 0) return RowPlan{addr & ~(kChunk - 1), 0u, 0u};
  uint64_t begin = addr & ~(kChunk - 1);
  uint64_t end = (addr + bytes + kChunk - 1) & ~(kChunk - 1);
  return plan_span(begin, end);
}

// Chunk loaded by lane position c (0 <= c < p.chunks): a rotation, so every
// chunk is loaded exactly once.
HECTOR_HD uint32_t plan_chunk(const RowPlan& p, uint32_t c) {
  uint32_t j = p.shift + c;
  return j >= p.chunks ? j - p.chunks : j;
}

}  // namespace hector

#endif
