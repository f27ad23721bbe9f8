// The argument block of every gather kernel, passed by value. Shared by the
// host (g++) and device (nvcc) sides: fixed-width fields only, so that both
// compilers lay it out identically.
#ifndef HECTOR_RUNTIME_GATHER_PARAMS_H
#define HECTOR_RUNTIME_GATHER_PARAMS_H

#include <stdint.h>

namespace hector {

struct GatherParams {
  uint64_t src;        // device-visible address of row 0
  int64_t src_rows;
  int64_t src_stride;  // bytes
  int64_t row_bytes;
  uint64_t index;      // int32 or int64 indices (the kernel's template)
  int64_t n_index;
  uint64_t dst;
  int64_t dst_stride;  // bytes
  uint64_t status;     // device address of this call's status word
  uint64_t tag;        // this call's tag, already shifted into bits 40..63
  int32_t wrap_negative;
  int32_t elem_bytes;  // naive kernel only: bytes per thread
  uint64_t dst_index;  // 0, or int64 output row of each gathered row
};

// Status word: the kernels atomicMax (tag | (kPosMask - position)) into it,
// so the call with the newest tag wins and, within one call, the lowest bad
// position wins. Nothing has to be cleared between calls.
// A bad scatter entry is reported as position | kBadDstFlag (positions stay
// below 2^39), so it ranks after every bad source index of the call.
constexpr int kTagShift = 40;
constexpr uint64_t kPosMask = (uint64_t(1) << kTagShift) - 1;
constexpr uint64_t kBadDstFlag = uint64_t(1) << 39;

// Threads per block of every gather kernel.
constexpr int kThreads = 256;

// Unrolled 16-byte loads per lane for whole-warp rows: 32 lanes x 8 x 16 B is
// a 4 KB row (or tile) in flight per warp.
constexpr int kUnroll = 8;

#ifdef __CUDACC__
#define HECTOR_CONSTEXPR_HD __host__ __device__ constexpr
#else
#define HECTOR_CONSTEXPR_HD constexpr
#endif

// Unrolled loads per lane for a group of G lanes per row.
HECTOR_CONSTEXPR_HD int unroll_for(int G) { return G == 32 ? kUnroll : 1; }
// The realigning kernel stages one tile of a row in shared memory: G lanes x
// unroll chunks of 16 bytes, plus 16 bytes that the realigning reads may
// touch past the end.
HECTOR_CONSTEXPR_HD uint32_t general_tile_chunks(int G) {
  return static_cast<uint32_t>(G * unroll_for(G));
}
HECTOR_CONSTEXPR_HD uint32_t general_buf_bytes(int G) {
  return general_tile_chunks(G) * 16u + 16u;
}
// Dynamic shared memory of one block of the realigning kernel.
HECTOR_CONSTEXPR_HD uint32_t general_smem_bytes(int G) {
  return static_cast<uint32_t>(kThreads / G) * general_buf_bytes(G);
}

}  // namespace hector

#endif
