// The offload fallback of fallback.h: a map from (cache, key) to a copy.
#include "fallback.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "device_copy.h"
#include "hector/runtime.h"
#include "launch/launch_status.h"

namespace hector {
namespace offload {
namespace {

struct Kept {
  void* data = nullptr;
  uint64_t bytes = 0;
  int device = -1;  // the device of a device copy; -1: host memory
  uint64_t refs = 1;
};

using Key = std::pair<const hector_tensor_cache*, uint64_t>;

std::mutex g_mutex;
std::map<Key, Kept> g_kept;
uint64_t g_ever = 0, g_bytes = 0;
std::atomic<bool> g_warned{false};

void free_copy(const Kept& k, int* status) {
  *status = HECTOR_OK;
  if (k.device < 0)
    std::free(k.data);
  else
    *status = device_free(k.data, k.device);
}

}  // namespace

bool fallback_ref(hector_tensor_cache* cache, uint64_t key, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_kept.find({cache, key});
  if (it == g_kept.end()) return false;
  if (it->second.bytes != bytes)
    record(HECTOR_ERROR_INVALID_ARGUMENT,
           "hector_offload_evict: key %llu holds %llu bytes, not %llu",
           (unsigned long long)key, (unsigned long long)it->second.bytes,
           (unsigned long long)bytes);
  else
    ++it->second.refs;
  return true;
}

void fallback_keep(hector_tensor_cache* cache, uint64_t key, const void* data, uint64_t bytes,
                   bool device) {
  // The copy is made outside the lock: a device copy waits for the GPU.
  Kept k;
  k.bytes = bytes;
  if (device) {
    if (!(k.data = device_alloc(bytes, &k.device))) return;
    if (!device_copy(k.data, data, bytes)) {
      int ignored;
      free_copy(k, &ignored);
      return;
    }
  } else if (bytes) {
    if (!(k.data = std::malloc(bytes))) {
      record(HECTOR_ERROR_OUT_OF_MEMORY,
             "hector_offload_evict: the tensor cache's host tier is full and %llu bytes "
             "of host memory for key %llu could not be allocated",
             (unsigned long long)bytes, (unsigned long long)key);
      return;
    }
    std::memcpy(k.data, data, bytes);
  }
  if (!g_warned.exchange(true))
    std::fprintf(stderr,
                 "hector: offload: the tensor cache's host tier is full; the runtime keeps "
                 "such values itself (%s memory, %llu bytes for key %llu); see "
                 "hector_offload_stats (warned once)\n",
                 device ? "device" : "host", (unsigned long long)bytes,
                 (unsigned long long)key);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto [it, fresh] = g_kept.emplace(Key{cache, key}, k);
    if (fresh) {
      ++g_ever;
      g_bytes += bytes;
      return;
    }
    ++it->second.refs;  // another thread kept the same key meanwhile
  }
  int ignored;
  free_copy(k, &ignored);
}

bool fallback_read(hector_tensor_cache* cache, uint64_t key, void* out, uint64_t bytes,
                   bool out_device) {
  // Copied under the lock, so that a concurrent release cannot free it.
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_kept.find({cache, key});
  if (it == g_kept.end()) return false;
  const Kept& k = it->second;
  if (k.bytes != bytes)
    record(HECTOR_ERROR_INVALID_ARGUMENT,
           "hector_offload_prefetch: key %llu holds %llu bytes, not %llu",
           (unsigned long long)key, (unsigned long long)k.bytes, (unsigned long long)bytes);
  else if (out_device || k.device >= 0)
    device_copy(out, k.data, bytes);
  else if (bytes)
    std::memcpy(out, k.data, bytes);
  return true;
}

bool fallback_release(hector_tensor_cache* cache, uint64_t key, int* status) {
  Kept dead;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kept.find({cache, key});
    if (it == g_kept.end()) return false;
    *status = HECTOR_OK;
    if (--it->second.refs > 0) return true;
    dead = it->second;
    g_bytes -= dead.bytes;
    g_kept.erase(it);
  }
  free_copy(dead, status);
  return true;
}

void fallback_stats(uint64_t* kept, uint64_t* values, uint64_t* bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *kept = g_ever;
  *values = g_kept.size();
  *bytes = g_bytes;
}

}  // namespace offload
}  // namespace hector
