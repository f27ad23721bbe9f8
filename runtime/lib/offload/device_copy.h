// The GPU side of offload: telling device memory from host memory, copies
// ordered after the entry's kernels, the pinned staging buffer, and device
// copies for the fallback.
//
// Evictions and prefetches of device memory copy on a copy stream per
// device, ordered after the entry's kernels by events; the fallback's and
// the disk reads' copies are synchronous (device_copy).
#ifndef HECTOR_RUNTIME_OFFLOAD_DEVICE_COPY_H
#define HECTOR_RUNTIME_OFFLOAD_DEVICE_COPY_H

#include <cuda.h>
#include <stdint.h>

#include <mutex>

namespace hector {
namespace offload {

// True if p is device memory. A process that has not loaded libcuda.so.1
// has none, and the driver is then never touched: the CPU path stays off it.
bool is_device_memory(const void* p);

// Copies `bytes` from src to dst (either may be device memory) after the
// entry's kernels on this thread's device and stream, and waits for it.
// Failures are recorded in the launch status; returns false.
// `piece` (0: none): the host side is pinned in ranges that start at the
// multiples of it, which one copy must not cross (it is split there).
bool device_copy(void* dst, const void* src, uint64_t bytes, uint64_t piece = 0);

// What follows an asynchronous copy: the event that completes with it (out),
// and an optional host function the copy stream runs after it (a tensor
// cache commit or read end: no CUDA call).
struct AsyncCopy {
  CUevent* done;
  CUhostFn host_func = nullptr;
  void* host_data = nullptr;
  uint64_t piece = 0;  // as device_copy's
};

// Copies `bytes` from src to dst (either may be device memory) on the
// device's copy stream, after the entry's kernels, and returns at once.
// Failures are recorded in the launch status; returns false.
bool copy_async(void* dst, const void* src, uint64_t bytes, const AsyncCopy& then);

// Makes what the entry runs next wait for `done` (the caller's stream waits
// for it; without one, the host does), then destroys it.
bool wait_copy(CUevent done);

// `bytes` of device memory on the thread's launch device (its ordinal in
// *device), or null with the failure recorded.
void* device_alloc(uint64_t bytes, int* device);

// Frees what device_alloc returned. For the caller's side: returns a status
// with hector_last_error().
int device_free(void* p, int device);

// `bytes` of pinned (page-locked, portable) host memory for the tensor
// cache's HECTOR_CACHE_PINNED mode, or null where no CUDA driver is loaded
// or it fails (the cache then uses pageable memory; nothing is recorded).
void* pinned_alloc(uint64_t bytes);
void pinned_free(void* p);

// Pins [p, p + bytes) of host memory the caller mapped (the tensor cache's
// host pool; portable, where a CUDA driver is loaded). False when there is
// no driver or it fails: the memory stays pageable, nothing is recorded.
bool pin_range(void* p, uint64_t bytes);
void unpin_range(void* p);

}  // namespace offload
}  // namespace hector

#endif
