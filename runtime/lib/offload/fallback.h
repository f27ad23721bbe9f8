// The offload fallback: values a tensor cache refused because its host tier
// was full, kept by the runtime under the same (cache, key) so that nothing
// is lost. Host memory is kept as a malloc'd copy, device memory as a
// device copy. Shared by all threads (one mutex); reference counted like
// the cache's own values.
#ifndef HECTOR_RUNTIME_OFFLOAD_FALLBACK_H
#define HECTOR_RUNTIME_OFFLOAD_FALLBACK_H

#include <stdint.h>

#include "hector/tensor_cache.h"

namespace hector {
namespace offload {

// The generated-code side; failures are recorded in the launch status.

// If the fallback holds (cache, key): adds a reference (`bytes` must be its
// size) and returns true.
bool fallback_ref(hector_tensor_cache* cache, uint64_t key, uint64_t bytes);

// Keeps a copy of [data, data + bytes) (device memory if `device`) under
// (cache, key); warns once on stderr.
void fallback_keep(hector_tensor_cache* cache, uint64_t key, const void* data, uint64_t bytes,
                   bool device);

// If the fallback holds (cache, key): copies it into `out` (device memory
// if `out_device`; `bytes` must be its size) and returns true.
bool fallback_read(hector_tensor_cache* cache, uint64_t key, void* out, uint64_t bytes,
                   bool out_device);

// The caller's side: if the fallback holds (cache, key), drops a reference
// (the last frees it), sets *status (with hector_last_error) and returns true.
bool fallback_release(hector_tensor_cache* cache, uint64_t key, int* status);

// Values ever kept, and the values and bytes held now.
void fallback_stats(uint64_t* kept, uint64_t* values, uint64_t* bytes);

}  // namespace offload
}  // namespace hector

#endif
