// The C API of hector/offload.h: the thread's binding, the evicts and
// prefetches of generated code, and the caller's release and statistics.
// Where the bytes go is the tensor cache's job; device memory goes through
// device_copy.h, values a full host tier refuses through fallback.h.
#include "hector/offload.h"

#include <atomic>
#include <cstdio>
#include <unordered_map>

#include "device_copy.h"
#include "error.h"
#include "tensor_cache/cache_direct.h"
#include "fallback.h"
#include "hector/launch.h"
#include "hector/runtime.h"
#include "launch/launch_status.h"

namespace hector {
namespace offload {
namespace {

struct Binding {
  hector_tensor_cache* cache = nullptr;
  uint64_t key_base = 0;
};
thread_local Binding t_binding;

struct Counts {
  std::atomic<uint64_t> values[2], bytes[2];  // per hector_cache_tier
  std::atomic<uint64_t> disk_to_host, prefetched_values, prefetched_bytes;
};
Counts g_counts;
std::atomic<bool> g_warned_no_disk{false};

// The bound cache and the key of `slot`, or null with the failure recorded.
hector_tensor_cache* bound(const char* fn, int64_t slot, const void* data, int64_t bytes,
                           uint64_t* key) {
  if (!t_binding.cache) {
    record(HECTOR_ERROR_INVALID_ARGUMENT,
           "%s: an entry point with offloaded values was called without hector_offload_bind",
           fn);
    return nullptr;
  }
  if (slot < 0 || bytes < 0 || (bytes > 0 && !data)) {
    record(HECTOR_ERROR_INVALID_ARGUMENT, "%s(slot %lld, %p, %lld bytes): bad arguments", fn,
           (long long)slot, data, (long long)bytes);
    return nullptr;
  }
  *key = t_binding.key_base + uint64_t(slot);
  return t_binding.cache;
}

// Puts `data` (host memory, or with `copy_in` device memory) into the
// cache's `tier`, counted. Returns the put's status (OUT_OF_MEMORY: the host
// tier is full, nothing stored; CUDA: the copy failed, recorded).
int put(hector_tensor_cache* cache, uint64_t key, void* data, uint64_t bytes, int tier,
        CacheCopy copy_in) {
  auto attempt = [&](hector_cache_tier t) {
    return copy_in ? tensor_cache_put_from(cache, key, bytes, t, copy_in, data)
                   : hector_tensor_cache_put(cache, key, data, bytes, t);
  };
  int s = attempt(hector_cache_tier(tier));
  if (s == HECTOR_ERROR_INVALID_ARGUMENT && tier == HECTOR_CACHE_DISK) {
    // The arguments were checked, so a disk put refused as invalid means a
    // cache without a disk tier, or a stored key of another size, which the
    // host put refuses the same way.
    s = attempt(HECTOR_CACHE_HOST);
    if (s == HECTOR_ERROR_INVALID_ARGUMENT) return s;
    tier = HECTOR_CACHE_HOST;
    g_counts.disk_to_host.fetch_add(1, std::memory_order_relaxed);
    if (!g_warned_no_disk.exchange(true))
      std::fprintf(stderr,
                   "hector: offload: a value planned for the disk tier went to the host tier: "
                   "the tensor cache has no directory (warned once)\n");
  }
  if (s == HECTOR_OK) {
    g_counts.values[tier].fetch_add(1, std::memory_order_relaxed);
    g_counts.bytes[tier].fetch_add(bytes, std::memory_order_relaxed);
  }
  return s;
}

void CUDA_CB commit_filled(void* fill) { tensor_cache_commit(static_cast<CacheFill*>(fill), true); }
void CUDA_CB end_read(void* read) { tensor_cache_read_end(static_cast<CacheRead*>(read)); }

// Prefetches in flight on this thread, by slot: hector_offload_wait makes
// the entry wait for them before their first reader.
thread_local std::unordered_map<int64_t, CUevent> t_prefetches;

// Evicts device memory with a copy on the copy stream. Returns the status
// of a put (OUT_OF_MEMORY: nothing stored; CUDA: recorded).
int evict_async(hector_tensor_cache* cache, uint64_t key, void* data, uint64_t bytes, int tier) {
  void* host = nullptr;
  CacheFill* fill = nullptr;
  int s = tensor_cache_reserve(cache, key, bytes, hector_cache_tier(tier), &host, &fill);
  if (s == HECTOR_ERROR_INVALID_ARGUMENT && tier == HECTOR_CACHE_DISK) {
    s = tensor_cache_reserve(cache, key, bytes, HECTOR_CACHE_HOST, &host, &fill);
    if (s == HECTOR_ERROR_INVALID_ARGUMENT) return s;
    tier = HECTOR_CACHE_HOST;
    g_counts.disk_to_host.fetch_add(1, std::memory_order_relaxed);
    if (!g_warned_no_disk.exchange(true))
      std::fprintf(stderr,
                   "hector: offload: a value planned for the disk tier went to the host tier: "
                   "the tensor cache has no directory (warned once)\n");
  }
  if (s != HECTOR_OK) return s;
  g_counts.values[tier].fetch_add(1, std::memory_order_relaxed);
  g_counts.bytes[tier].fetch_add(bytes, std::memory_order_relaxed);
  if (!fill) return HECTOR_OK;  // stored already: one more reference
  CUevent done = nullptr;
  if (!copy_async(host, data, bytes,
                  AsyncCopy{&done, commit_filled, fill, tensor_cache_pinned_piece(cache, host)})) {
    tensor_cache_commit(fill, false);
    return HECTOR_ERROR_CUDA;
  }
  free_after_copy(reinterpret_cast<CUdeviceptr>(data), done);
  return HECTOR_OK;
}

// Starts copying a value in host memory to the device on the copy stream;
// kCacheOnDisk for a value on disk (the caller reads it synchronously).
int prefetch_async(hector_tensor_cache* cache, uint64_t key, int64_t slot, void* data,
                   uint64_t bytes) {
  const void* host = nullptr;
  CacheRead* read = nullptr;
  int s = tensor_cache_read_begin(cache, key, bytes, &host, &read);
  if (s != HECTOR_OK) return s;
  CUevent done = nullptr;
  if (!copy_async(data, host, bytes,
                  AsyncCopy{&done, end_read, read, tensor_cache_pinned_piece(cache, host)})) {
    tensor_cache_read_end(read);
    return HECTOR_ERROR_CUDA;
  }
  if (auto it = t_prefetches.find(slot); it != t_prefetches.end()) {
    wait_copy(it->second);  // the same slot again (a backward run twice)
    t_prefetches.erase(it);
  }
  t_prefetches.emplace(slot, done);
  return HECTOR_OK;
}

// Reads from the cache in flight on this thread, by slot: into host memory,
// or into a host block of the cache on the way to device memory (a value on
// disk). Reads started one after another run together on the cache's I/O
// threads; hector_offload_wait (or unbind) completes them.
struct PendingRead {
  hector_tensor_cache_read* read = nullptr;
  hector_tensor_cache* cache = nullptr;
  void* staging = nullptr;  // the host block, for device memory
  uint64_t staging_size = 0;
  void* device = nullptr;
  uint64_t bytes = 0;
};
thread_local std::unordered_map<int64_t, PendingRead> t_reads;

// Completes a read; its failure is recorded only with `report` (the first
// failure on a thread is the one reported).
void finish_read(int64_t slot, PendingRead& p, bool report) {
  int s = hector_tensor_cache_wait(p.read);
  if (s != HECTOR_OK && report)
    record(s, "hector_offload_prefetch(slot %lld): %s", (long long)slot, last_error());
  else if (s == HECTOR_OK && p.staging && report)
    device_copy(p.device, p.staging, p.bytes,  // records its failure
                tensor_cache_pinned_piece(p.cache, p.staging));
  if (p.staging) tensor_cache_give_host(p.cache, p.staging, p.staging_size);
}

void finish_read_of(int64_t slot, bool report) {
  auto it = t_reads.find(slot);
  if (it == t_reads.end()) return;
  PendingRead p = it->second;
  t_reads.erase(it);
  finish_read(slot, p, report);
}

// Starts reading `key` into `data` (host memory), or with `to_device`
// through a host block into `data` (device memory). Returns the status of
// the start (INVALID_ARGUMENT, OUT_OF_MEMORY: failure set).
int start_read(hector_tensor_cache* cache, uint64_t key, int64_t slot, void* data,
               uint64_t bytes, bool to_device) {
  finish_read_of(slot, true);  // the same slot again (a backward run twice)
  PendingRead p;
  p.cache = cache;
  void* out = data;
  if (to_device) {
    p.staging = tensor_cache_take_host(cache, bytes, &p.staging_size);
    if (!p.staging) return HECTOR_ERROR_OUT_OF_MEMORY;
    p.device = data;
    p.bytes = bytes;
    out = p.staging;
  }
  int s = hector_tensor_cache_get_async(cache, key, out, bytes, &p.read);
  if (s != HECTOR_OK) {
    if (p.staging) tensor_cache_give_host(cache, p.staging, p.staging_size);
    return s;
  }
  t_reads.emplace(slot, p);
  return HECTOR_OK;
}

// Waits for every prefetch in flight on this thread.
void wait_all() {
  bool report = hector_launch_status() == HECTOR_OK;
  for (auto& [slot, p] : t_reads) finish_read(slot, p, report);
  t_reads.clear();
  for (auto& [slot, done] : t_prefetches) wait_copy(done);
  t_prefetches.clear();
}

}  // namespace
}  // namespace offload
}  // namespace hector

using namespace hector;
using namespace hector::offload;

extern "C" {

HECTOR_API int hector_offload_bind(hector_tensor_cache* cache, uint64_t key_base) {
  clear_error();
  if (!cache) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_offload_bind: cache is NULL");
  t_binding = {cache, key_base};
  return HECTOR_OK;
}

HECTOR_API void hector_offload_unbind(void) {
  wait_all();
  t_binding = {};
}

HECTOR_API void hector_offload_wait(int64_t slot) {
  // A read from the cache in flight is completed even after a failure (it
  // writes into the entry's buffer), but reports only the first.
  finish_read_of(slot, hector_launch_status() == HECTOR_OK);
  if (hector_launch_status() != HECTOR_OK) return;
  auto it = t_prefetches.find(slot);
  if (it == t_prefetches.end()) return;  // synchronous, or never started
  CUevent done = it->second;
  t_prefetches.erase(it);
  wait_copy(done);
}

HECTOR_API void hector_offload_evict(int64_t slot, int32_t tier, void* data, int64_t bytes) {
  if (hector_launch_status() != HECTOR_OK) return;
  uint64_t key = 0;
  hector_tensor_cache* cache = bound("hector_offload_evict", slot, data, bytes, &key);
  if (!cache) return;
  if (tier != HECTOR_CACHE_HOST && tier != HECTOR_CACHE_DISK) {
    record(HECTOR_ERROR_INVALID_ARGUMENT, "hector_offload_evict(slot %lld): unknown tier %d",
           (long long)slot, tier);
    return;
  }
  uint64_t n = uint64_t(bytes);
  if (fallback_ref(cache, key, n)) return;  // kept already: one more reference
  bool device = n > 0 && is_device_memory(data);
  // Device memory is copied into the cache's host memory (pinned in
  // HECTOR_CACHE_PINNED mode) on the copy stream, beside the kernels that
  // follow; the buffer's free waits for the copy, the cache's commit runs
  // after it.
  int s = device ? evict_async(cache, key, data, n, tier) : put(cache, key, data, n, tier, nullptr);
  if (s == HECTOR_ERROR_CUDA) return;  // the copy's failure is recorded
  if (s == HECTOR_ERROR_OUT_OF_MEMORY)
    fallback_keep(cache, key, data, n, device);
  else if (s != HECTOR_OK)
    record(s, "hector_offload_evict(slot %lld): %s", (long long)slot, last_error());
}

HECTOR_API void hector_offload_prefetch(int64_t slot, void* data, int64_t bytes) {
  if (hector_launch_status() != HECTOR_OK) return;
  uint64_t key = 0;
  hector_tensor_cache* cache = bound("hector_offload_prefetch", slot, data, bytes, &key);
  if (!cache) return;
  uint64_t n = uint64_t(bytes);
  bool device = n > 0 && is_device_memory(data);
  if (!fallback_read(cache, key, data, n, device)) {
    // Host memory, and values on disk, are read by the cache's I/O threads
    // while the entry goes on (several prefetches in a row run together);
    // hector_offload_wait completes them. A value on disk on its way to
    // device memory is read into a host block of the cache, then copied.
    int s;
    if (!device) {
      s = start_read(cache, key, slot, data, n, false);
    } else if ((s = prefetch_async(cache, key, slot, data, n)) == kCacheOnDisk) {
      s = start_read(cache, key, slot, data, n, true);
    }
    if (s == HECTOR_ERROR_CUDA) return;  // the copy's failure is recorded
    if (s != HECTOR_OK) {
      record(s, "hector_offload_prefetch(slot %lld): %s", (long long)slot, last_error());
      return;
    }
  }
  if (hector_launch_status() != HECTOR_OK) return;  // the fallback's copy failed
  g_counts.prefetched_values.fetch_add(1, std::memory_order_relaxed);
  g_counts.prefetched_bytes.fetch_add(n, std::memory_order_relaxed);
}

HECTOR_API int hector_offload_release(hector_tensor_cache* cache, uint64_t key) {
  clear_error();
  if (!cache)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_offload_release: cache is NULL");
  int s = HECTOR_OK;
  if (fallback_release(cache, key, &s)) return s;
  return hector_tensor_cache_release(cache, key);
}

HECTOR_API int hector_offload_stats_get(hector_offload_stats* out) {
  clear_error();
  if (!out) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_offload_stats_get: out is NULL");
  hector_offload_stats s{};
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  s.evicted_host_values = get(g_counts.values[HECTOR_CACHE_HOST]);
  s.evicted_host_bytes = get(g_counts.bytes[HECTOR_CACHE_HOST]);
  s.evicted_disk_values = get(g_counts.values[HECTOR_CACHE_DISK]);
  s.evicted_disk_bytes = get(g_counts.bytes[HECTOR_CACHE_DISK]);
  s.disk_to_host = get(g_counts.disk_to_host);
  s.prefetched_values = get(g_counts.prefetched_values);
  s.prefetched_bytes = get(g_counts.prefetched_bytes);
  fallback_stats(&s.fallbacks, &s.fallback_values, &s.fallback_bytes);
  *out = s;
  return HECTOR_OK;
}

}  // extern "C"
