// The tensor cache's entries for the offload runtime (offload.cpp): a put
// whose bytes are copied into the cache's host memory by the caller (from
// device memory, straight into pinned memory), and a get that hands the
// cache's host copy to the caller (to device memory) without a host-to-host
// copy first.
#ifndef HECTOR_RUNTIME_TENSOR_CACHE_DIRECT_H
#define HECTOR_RUNTIME_TENSOR_CACHE_DIRECT_H

#include <stdint.h>

#include "hector/tensor_cache.h"

namespace hector {

// Copies `len` bytes between the cache's host memory `host` and byte
// `offset` of the caller's value; false when it failed (the callback records
// why).
using CacheCopy = bool (*)(void* context, void* host, uint64_t offset, uint64_t len);

// hector_tensor_cache_put, with `copy_in` filling the host copy chunk by
// chunk instead of memcpy from a host pointer. A failed copy stores nothing
// and returns HECTOR_ERROR_CUDA.
int tensor_cache_put_from(hector_tensor_cache* cache, uint64_t key, uint64_t bytes,
                          hector_cache_tier tier, CacheCopy copy_in, void* context);

// An asynchronous put: reserve the value's host memory, let the caller copy
// into it (a device-to-host copy on a stream), then commit it (from any
// thread, e.g. a stream callback; it makes no CUDA call). Until committed,
// a get of the key waits. *fill is null when the key was stored already
// (one more reference, nothing to copy).
struct CacheFill;
int tensor_cache_reserve(hector_tensor_cache* cache, uint64_t key, uint64_t bytes,
                         hector_cache_tier tier, void** host, CacheFill** fill);
// ok = false: the copy failed; nothing is stored under the key.
void tensor_cache_commit(CacheFill* fill, bool ok);

// An asynchronous get from host memory: *host is the value's host copy
// (checksum verified), kept until tensor_cache_read_end. Returns
// kCacheOnDisk for a value whose copy is on disk (read it with
// hector_tensor_cache_get_async into a tensor_cache_take_host block).
constexpr int kCacheOnDisk = 1000;
struct CacheRead;
int tensor_cache_read_begin(hector_tensor_cache* cache, uint64_t key, uint64_t bytes,
                            const void** host, CacheRead** read);
void tensor_cache_read_end(CacheRead* read);

// A host block of at least `bytes` from the cache's memory (its host pool,
// else a block it keeps, pinned in HECTOR_CACHE_PINNED mode), not charged to
// its capacity: where a value on disk is read on its way to device memory.
// Null (failure set) when there is none; *size is what to give back.
void* tensor_cache_take_host(hector_tensor_cache* cache, uint64_t bytes, uint64_t* size);
void tensor_cache_give_host(hector_tensor_cache* cache, void* block, uint64_t size);

// The pieces the cache's host memory at `host` is pinned in (its host pool
// pins chunk by chunk): a device copy of it must not cross a multiple of
// this address (the driver refuses a copy across two registrations). 0: one
// piece.
uint64_t tensor_cache_pinned_piece(hector_tensor_cache* cache, const void* host);

}  // namespace hector

#endif
