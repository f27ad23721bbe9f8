// The tensor cache's host pool (host_pool.h).
#include "host_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

namespace hector {
namespace {

// Faults the pages of [p, p + bytes) in, so that the first copy into them
// does not pay for fresh pages.
void fault_in(char* p, uint64_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  long page = sysconf(_SC_PAGESIZE);
  for (uint64_t off = 0; off < bytes; off += uint64_t(page)) p[off] = 0;
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

HostPool::~HostPool() {
  stop();
  if (!base_) return;
  if (unpin_)
    for (char* p : pinned_) unpin_(p);
  munmap(mapped_, bytes_ + chunk_);
}

int HostPool::start(uint64_t bytes, uint64_t chunk, PinFn pin, UnpinFn unpin, uint64_t delay_us,
                    std::string& why) {
  void* p = mmap(nullptr, bytes + chunk, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    why = "mapping the host pool";
    return errno;
  }
  mapped_ = static_cast<char*>(p);
  uintptr_t at = reinterpret_cast<uintptr_t>(p);
  base_ = mapped_ + ((at + chunk - 1) / chunk * chunk - at);
  bytes_ = bytes;
  chunk_ = chunk;
  pin_ = pin;
  unpin_ = unpin;
  delay_us_ = delay_us;
  stats_.bytes = bytes;
  stats_.making = true;
  free_.emplace(0, bytes);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    stats_.making = false;
    why = "starting the host pool's thread";
    return EAGAIN;
  }
  return 0;
}

void HostPool::run() {
  for (uint64_t off = 0; off < bytes_; off += chunk_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    uint64_t t0 = now_ns(), len = std::min(chunk_, bytes_ - off);
    char* p = base_ + off;
    bool pinned = pin_ && pin_(p, len);  // pinning faults the pages in itself
    if (!pinned) fault_in(p, len);
    std::unique_lock<std::mutex> lock(mu_);
    if (delay_us_)
      changed_.wait_for(lock, std::chrono::microseconds(delay_us_), [&] { return stopping_; });
    stats_.bytes_ready += len;
    if (pinned) {
      stats_.bytes_pinned += len;
      pinned_.push_back(p);
    }
    stats_.pin_ns += now_ns() - t0;
    changed_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.making = false;
  changed_.notify_all();
}

void HostPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HostPool::wait_ready() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !stats_.making; });
}

char* HostPool::allocate(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ready = stats_.bytes_ready;
  for (auto it = free_.begin(); it != free_.end() && it->first < ready; ++it) {
    uint64_t begin = it->first, end = begin + it->second, start = begin;
    if (bytes <= chunk_ && start / chunk_ != (start + bytes - 1) / chunk_)
      start = (start / chunk_ + 1) * chunk_;  // keep it within one chunk
    if (start + bytes > std::min(end, ready)) continue;
    free_.erase(it);
    if (start > begin) free_.emplace(begin, start - begin);
    if (end > start + bytes) free_.emplace(start + bytes, end - start - bytes);
    return base_ + start;
  }
  return nullptr;
}

void HostPool::free(char* p, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t offset = uint64_t(p - base_);
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + bytes) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  free_.emplace(offset, bytes);
}

HostPool::Stats HostPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace hector
