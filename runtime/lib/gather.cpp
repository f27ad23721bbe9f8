// Host side of hector_gather: argument checks, the choice of kernel, the
// launch, and the optional check for bad indices.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "device.h"
#include "error.h"
#include "gather_params.h"
#include "hector/runtime.h"

namespace hector {
namespace {

constexpr int32_t kKnownFlags = HECTOR_GATHER_CHECK | HECTOR_GATHER_WRAP_NEGATIVE |
                                HECTOR_GATHER_NAIVE | HECTOR_GATHER_FORCE_GENERAL;

struct LaunchPlan {
  char name[48];        // kernel entry point
  int lanes = 1;        // G: lanes per row (row kernels)
  int elem = 0;         // naive kernel: bytes per thread
  unsigned smem = 0;    // dynamic shared memory per block
  int64_t threads = 0;  // threads the work needs (before the occupancy cap)
};

int next_pow2_capped(int64_t n, int cap) {
  int g = 1;
  while (g < n && g < cap) g *= 2;
  return g;
}

int validate(const hector_gather_desc* d) {
  if (!d) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: desc is NULL");
  if (d->reserved != 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: desc.reserved must be 0");
  if (d->flags & ~kKnownFlags)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: unknown flags %#x",
                static_cast<unsigned>(d->flags & ~kKnownFlags));
  if (d->index_bytes != 4 && d->index_bytes != 8)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_gather: index_bytes must be 4 (int32) or 8 (int64), got %d",
                d->index_bytes);
  if (d->n_index < 0 || static_cast<uint64_t>(d->n_index) >= kBadDstFlag)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_gather: n_index %" PRId64 " outside [0, 2^39)", d->n_index);
  if (d->row_bytes > (int64_t(1) << 35))
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_gather: row_bytes %" PRId64 " is over the 32 GiB limit", d->row_bytes);
  if (d->row_bytes < 0 || d->src_rows < 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_gather: row_bytes (%" PRId64 ") and src_rows (%" PRId64
                ") must be >= 0",
                d->row_bytes, d->src_rows);
  if (d->src_stride < d->row_bytes || d->dst_stride < d->row_bytes)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_gather: strides (src %" PRId64 ", dst %" PRId64
                ") must be >= row_bytes (%" PRId64 "); overlapping rows are not supported",
                d->src_stride, d->dst_stride, d->row_bytes);
  // Addresses are computed in 64 bits: the extents must not overflow.
  if (d->src_rows > 0 && d->src_stride > 0 && d->src_rows - 1 > (INT64_MAX - d->row_bytes) / d->src_stride)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: source extent overflows");
  if (d->n_index > 0 && d->dst_stride > 0 && d->n_index - 1 > (INT64_MAX - d->row_bytes) / d->dst_stride)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: destination extent overflows");
  if (d->n_index > 0 && !d->index)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: index must be non-NULL");
  if (d->n_index > 0 && d->row_bytes > 0 && !d->dst)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: dst must be non-NULL");
  if (d->n_index > 0 && d->row_bytes > 0 && d->src_rows > 0 && !d->src)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: src is NULL");
  if (d->device < 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather: device %d is negative", d->device);
  return HECTOR_OK;
}

void plan(const hector_gather_desc* d, LaunchPlan* p) {
  const int ibits = d->index_bytes * 8;
  const uint64_t layout = reinterpret_cast<uintptr_t>(d->src) |
                          reinterpret_cast<uintptr_t>(d->dst) |
                          static_cast<uint64_t>(d->src_stride) |
                          static_cast<uint64_t>(d->dst_stride) |
                          static_cast<uint64_t>(d->row_bytes);
  if (d->flags & HECTOR_GATHER_NAIVE) {
    // One thread per element of up to 4 bytes (a float), as alignment allows.
    p->elem = (layout % 4 == 0) ? 4 : (layout % 2 == 0) ? 2 : 1;
    snprintf(p->name, sizeof p->name, "hector_naive_e%d_i%d", p->elem, ibits);
    p->threads = d->n_index * (d->row_bytes / p->elem);
    return;
  }
  if (layout % 16 == 0 && !(d->flags & HECTOR_GATHER_FORCE_GENERAL)) {
    p->lanes = next_pow2_capped(d->row_bytes / 16, 32);
    snprintf(p->name, sizeof p->name, "hector_aligned_g%d_i%d", p->lanes, ibits);
  } else {
    // A row of b bytes at any alignment touches at most (b + 30) / 16 chunks.
    p->lanes = next_pow2_capped((d->row_bytes + 30) / 16, 32);
    p->smem = general_smem_bytes(p->lanes);
    snprintf(p->name, sizeof p->name, "hector_general_g%d_i%d", p->lanes, ibits);
  }
  p->threads = d->n_index * p->lanes;
}

}  // namespace
}  // namespace hector

using namespace hector;

extern "C" int hector_gather_variant(const hector_gather_desc* desc, char* buf, size_t buf_len) {
  clear_error();
  if (int s = validate(desc)) return s;
  if (!buf || buf_len == 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_gather_variant: empty buffer");
  LaunchPlan p;
  plan(desc, &p);
  // "hector_aligned_g32_i64" -> "aligned/g32/i64"
  char text[48];
  std::strncpy(text, p.name + std::strlen("hector_"), sizeof text - 1);
  text[sizeof text - 1] = '\0';
  for (char* c = text; *c; ++c)
    if (*c == '_') *c = '/';
  snprintf(buf, buf_len, "%s", text);
  return HECTOR_OK;
}

extern "C" int hector_gather(const hector_gather_desc* desc, int64_t* bad_position,
                             int64_t* bad_index) {
  clear_error();
  if (int s = validate(desc)) return s;
  LaunchPlan lp;
  plan(desc, &lp);
  Device* dev = nullptr;
  if (int s = get_device(desc->device, &dev)) return s;
  if (desc->n_index == 0) return HECTOR_OK;
  ContextScope scope(dev);
  if (scope.status()) return scope.status();
  Kernel k;
  if (int s = get_kernel(dev, lp.name, lp.smem, &k)) return s;
  int slot = 0;
  uint64_t tag = 0;
  if (int s = next_status_slot(dev, &slot, &tag)) return s;

  GatherParams prm;
  std::memset(&prm, 0, sizeof prm);
  prm.src = reinterpret_cast<uintptr_t>(desc->src);
  prm.src_rows = desc->src_rows;
  prm.src_stride = desc->src_stride;
  prm.row_bytes = desc->row_bytes;
  prm.index = reinterpret_cast<uintptr_t>(desc->index);
  prm.n_index = desc->n_index;
  prm.dst = reinterpret_cast<uintptr_t>(desc->dst);
  prm.dst_stride = desc->dst_stride;
  prm.status = dev->status_ring + static_cast<CUdeviceptr>(slot) * sizeof(uint64_t);
  prm.tag = tag << kTagShift;
  prm.wrap_negative = (desc->flags & HECTOR_GATHER_WRAP_NEGATIVE) ? 1 : 0;
  prm.elem_bytes = lp.elem;
  prm.dst_index = reinterpret_cast<uintptr_t>(desc->dst_index);

  // Enough blocks to cover the work, but no more than fit on the GPU at once:
  // the kernels loop over rows (a persistent grid).
  const int64_t needed = (lp.threads + kThreads - 1) / kThreads;
  const int64_t resident = static_cast<int64_t>(dev->sm_count) * k.blocks_per_sm;
  const unsigned grid = static_cast<unsigned>(needed < 1 ? 1 : (needed < resident ? needed : resident));
  CUstream stream = static_cast<CUstream>(desc->stream);
  void* args[] = {&prm};
  CUresult r = dev->cu->cuLaunchKernel(k.f, grid, 1, 1, kThreads, 1, 1, lp.smem, stream, args,
                                       nullptr);
  if (r != CUDA_SUCCESS) return cu_fail(r, "launching the gather kernel (cuLaunchKernel)");
  if (!(desc->flags & HECTOR_GATHER_CHECK)) return HECTOR_OK;

  uint64_t* host_word = dev->host_ring + slot;
  r = dev->cu->cuMemcpyDtoHAsync(host_word, prm.status, sizeof(uint64_t), stream);
  if (r != CUDA_SUCCESS) return cu_fail(r, "reading the gather status (cuMemcpyDtoHAsync)");
  r = dev->cu->cuStreamSynchronize(stream);
  if (r != CUDA_SUCCESS) return cu_fail(r, "gather kernel failed (cuStreamSynchronize)");
  const uint64_t word = *host_word;
  if ((word >> kTagShift) != tag) return HECTOR_OK;
  const uint64_t code = kPosMask - (word & kPosMask);
  const int64_t bad = static_cast<int64_t>(code & ~kBadDstFlag);  // gathered row
  int64_t pos = bad;  // the caller's position: dst_index[bad] when scattered
  if (prm.dst_index) {
    r = dev->cu->cuMemcpyDtoH(&pos, prm.dst_index + bad * 8, 8);
    if (r != CUDA_SUCCESS) return cu_fail(r, "reading dst_index (cuMemcpyDtoH)");
    if (code & kBadDstFlag)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "hector_gather: dst_index[%" PRId64 "] = %" PRId64
                  " is outside [0, n_index = %" PRId64 "); that row was not written",
                  bad, pos, desc->n_index);
  }
  int64_t value = 0;
  if (desc->index_bytes == 4) {
    int32_t v32 = 0;
    r = dev->cu->cuMemcpyDtoH(&v32, prm.index + bad * 4, 4);
    value = v32;
  } else {
    r = dev->cu->cuMemcpyDtoH(&value, prm.index + bad * 8, 8);
  }
  if (r != CUDA_SUCCESS) return cu_fail(r, "reading the bad index (cuMemcpyDtoH)");
  if (bad_position) *bad_position = pos;
  if (bad_index) *bad_index = value;
  if (desc->flags & HECTOR_GATHER_WRAP_NEGATIVE)
    return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
                "index %" PRId64 " at position %" PRId64 " is out of range for %" PRId64
                " rows (valid: -%" PRId64 " to %" PRId64 ")",
                value, pos, desc->src_rows, desc->src_rows, desc->src_rows - 1);
  return fail(HECTOR_ERROR_INDEX_OUT_OF_RANGE,
              "index %" PRId64 " at position %" PRId64 " is out of range for %" PRId64
              " rows (valid: 0 to %" PRId64 ")",
              value, pos, desc->src_rows, desc->src_rows - 1);
}
