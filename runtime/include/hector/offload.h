/* Hector runtime: the functions that compiled training entry points (f_fwd,
 * f_bwd of `hectorc` libraries, CPU or CUDA) call for the saved values their
 * offload plan moves out of device memory, and the caller's side of them
 * (docs/offload.md, "Compiled offload: the runtime side").
 *
 * The caller binds a tensor cache to its thread, calls the entry points, and
 * releases the keys once no backward will read them again:
 *
 *     hector_offload_bind(cache, base);
 *     hector_launch_clear();
 *     f_fwd(...);                  // evicts saved value `slot` under base + slot
 *     f_bwd(...);                  // prefetches them back
 *     if (hector_launch_status() != HECTOR_OK) report(hector_launch_error());
 *     for each offloaded slot: hector_offload_release(cache, base + slot);
 *     hector_offload_unbind();
 *
 * Error model: that of hector/launch.h. The functions generated code calls
 * never abort and return nothing: the first failure on a thread is recorded
 * in the thread's launch status, and later evicts and prefetches on that
 * thread do nothing until hector_launch_clear(). The caller's functions
 * return a status with hector_last_error(), as in hector/runtime.h.
 *
 * Nothing is lost. An eviction to the disk tier of a cache without one goes
 * to its host tier; one that finds the host tier full is kept by the runtime
 * itself (a malloc'd copy of host memory, a device copy of device memory),
 * under the same (cache, key), until released. Each case warns once on
 * stderr and is counted in hector_offload_stats.
 *
 * Device memory (CUDA libraries) is copied on a copy stream per device,
 * straight into and out of the cache's host memory (pinned with
 * HECTOR_CACHE_PINNED): an evict's copy starts after the entry's kernels
 * (its stream, set by hector_set_stream, else the whole context) and the
 * call returns; the buffer's free waits for the copy. A prefetch's copy
 * starts and the call returns; hector_offload_wait before the value's first
 * reader makes the entry wait for it. A value read back from disk, and any
 * value prefetched into host memory (CPU libraries), is read by the tensor
 * cache's I/O threads from the prefetch on, together with the prefetches
 * that follow it; hector_offload_wait completes the read (and copies it to
 * the device). The fallback's copies are synchronous. Host memory never
 * touches the CUDA driver.
 *
 * The binding is per thread; the fallback and the statistics are shared by
 * all threads and thread-safe.
 */
#ifndef HECTOR_OFFLOAD_H
#define HECTOR_OFFLOAD_H

#include <stdint.h>

#include "hector/runtime.h"
#include "hector/tensor_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Process-wide counts since the library was loaded. */
typedef struct hector_offload_stats {
  uint64_t evicted_host_values; /* evictions stored in a cache's host tier */
  uint64_t evicted_host_bytes;
  uint64_t evicted_disk_values; /* evictions stored in a cache's disk tier */
  uint64_t evicted_disk_bytes;
  uint64_t disk_to_host;        /* disk evictions sent to the host tier: no disk tier */
  uint64_t prefetched_values;   /* prefetches served, from a cache or the fallback */
  uint64_t prefetched_bytes;
  uint64_t fallbacks;           /* evictions a full host tier refused, kept by the runtime */
  uint64_t fallback_values;     /* values the fallback holds now */
  uint64_t fallback_bytes;      /* bytes it holds now (host and device) */
} hector_offload_stats;

/* Caller side: before calling an entry point whose manifest lists
 * "offload" values, bind this thread's offload context; the entry's evicts
 * and prefetches use `cache`, under keys key_base + slot. Returns HECTOR_OK
 * or INVALID_ARGUMENT (null cache). */
HECTOR_API int hector_offload_bind(hector_tensor_cache* cache, uint64_t key_base);

/* Completes the prefetches in flight on this thread, then forgets its
 * binding. Never fails (a failed read is recorded in the launch status). */
HECTOR_API void hector_offload_unbind(void);

/* Caller side: drops one reference to the value stored under `key` (each
 * evict adds one), from the fallback or else from the cache. Fails with
 * INVALID_ARGUMENT (null cache, unknown key). Release every key before
 * destroying its cache: the fallback knows the cache only by address. */
HECTOR_API int hector_offload_release(hector_tensor_cache* cache, uint64_t key);

/* Caller side: the statistics above. Fails with INVALID_ARGUMENT (null out). */
HECTOR_API int hector_offload_stats_get(hector_offload_stats* out);

/* Called by generated code. Stores a copy of [data, data + bytes) under
 * key_base + slot in the bound cache's `tier` (hector_cache_tier: 0 host,
 * 1 disk). `data` is host memory for CPU libraries, device memory for CUDA
 * libraries; the caller frees it when this returns. Records
 * INVALID_ARGUMENT (no binding, a bad tier, slot or size), OUT_OF_MEMORY or
 * CUDA. */
HECTOR_API void hector_offload_evict(int64_t slot, int32_t tier, void* data, int64_t bytes);

/* Called by generated code. Starts copying the value stored under
 * key_base + slot into [data, data + bytes), which must be its size, and
 * may return before the copy is done: `data` holds the value after
 * hector_offload_wait(slot), or hector_offload_unbind, and must not be
 * freed before either. The key stays stored (a backward may run again with
 * retain_graph). Records INVALID_ARGUMENT (no binding, unknown key, size
 * mismatch) at once; IO (a read error or a checksum mismatch) or CUDA here
 * or at the wait. */
HECTOR_API void hector_offload_prefetch(int64_t slot, void* data, int64_t bytes);
/* Called by generated code before the first reader of a prefetched value:
 * completes the prefetch of `slot` (a read from the tensor cache in flight),
 * and makes what the entry runs next wait for its copy to the device (on a
 * copy stream). A prefetch already complete has nothing to wait for. */
HECTOR_API void hector_offload_wait(int64_t slot);

#ifdef __cplusplus
}
#endif

#endif /* HECTOR_OFFLOAD_H */
