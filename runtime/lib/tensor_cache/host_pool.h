// The tensor cache's host pool: one region of host memory, made ready
// (pinned for the GPU, or just faulted in) chunk by chunk by a background
// thread, so that the ~0.6 s per GiB that pinning costs is paid before the
// first training step instead of inside it. The cache carves its values'
// host blocks out of the part made so far (first fit over free extents,
// coalesced on free); a put that finds no room there takes pageable memory
// instead of waiting (tensor_cache.cpp says why).
#ifndef HECTOR_RUNTIME_TENSOR_CACHE_HOST_POOL_H
#define HECTOR_RUNTIME_TENSOR_CACHE_HOST_POOL_H

#include <stdint.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hector {

class HostPool {
 public:
  // What makes one chunk ready: pins it (true) or leaves it pageable
  // (false; the pool then faults its pages in). Replaceable for tests.
  using PinFn = bool (*)(void* p, uint64_t bytes);
  using UnpinFn = void (*)(void* p);

  struct Stats {
    uint64_t bytes = 0;         // the region's size
    uint64_t bytes_ready = 0;   // made so far, from the start of the region
    uint64_t bytes_pinned = 0;  // of those, page-locked
    uint64_t pin_ns = 0;        // the background thread's time making them
    bool making = false;        // the thread is still at work
  };

  HostPool() = default;
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;
  ~HostPool();  // stop(), then unpins and unmaps

  // Maps `bytes` (a multiple of `chunk`, itself of 4 KiB), aligned to
  // `chunk` (so chunks start at multiples of it), and starts the thread that makes it ready chunk by chunk with `pin` (null: fault the
  // pages in only). Each chunk takes at least `delay_us` longer (a test
  // hook for slow pinning; the wait ends early on stop()). Returns 0 or an
  // errno with `why` set.
  int start(uint64_t bytes, uint64_t chunk, PinFn pin, UnpinFn unpin, uint64_t delay_us,
            std::string& why);
  bool started() const { return base_ != nullptr; }

  // Stops the thread after the chunk it is making and joins it. The part
  // made stays usable.
  void stop();
  // Waits until the whole region is ready or the thread has stopped.
  void wait_ready();

  // A block of `bytes` (a multiple of 4 KiB) within the part made so far,
  // never crossing a chunk boundary when it fits in one chunk (one pinned
  // range per copy), or null.
  char* allocate(uint64_t bytes);
  bool owns(const char* p) const { return base_ && p >= base_ && p < base_ + bytes_; }
  // The size of the pinned ranges p is in: a copy between device memory
  // and pinned host memory must stay within one (the driver refuses one
  // across two registrations), so it is split at the multiples of it. 0:
  // not the pool's, or nothing pinned.
  uint64_t pinned_piece(const void* p) const {
    return pin_ && owns(static_cast<const char*>(p)) ? chunk_ : 0;
  }
  void free(char* p, uint64_t bytes);

  Stats stats() const;

 private:
  void run();

  char* base_ = nullptr;
  char* mapped_ = nullptr;  // the mapping, `chunk_` larger to align base_
  uint64_t bytes_ = 0, chunk_ = 0, delay_us_ = 0;
  PinFn pin_ = nullptr;
  UnpinFn unpin_ = nullptr;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a chunk made, or stopping
  bool stopping_ = false;
  Stats stats_;
  std::vector<char*> pinned_;            // chunks to unpin
  std::map<uint64_t, uint64_t> free_;    // offset -> bytes, coalesced
};

}  // namespace hector

#endif
