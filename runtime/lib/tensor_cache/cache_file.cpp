#include "cache_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <unistd.h>

namespace hector {

CacheFile::~CacheFile() {
  if (fd_ >= 0) ::close(fd_);
}

int CacheFile::open(const std::string& directory, bool buffered, std::string& why) {
  std::string pattern = directory + "/hector-cache-XXXXXX";
  int fd = ::mkstemp(pattern.data());
  if (fd < 0) {
    why = "cannot create a file in " + directory;
    return errno;
  }
  // The file lives as long as the descriptor: nothing is left behind when
  // the process ends, however it ends.
  ::unlink(pattern.c_str());
  fd_ = fd;
  direct_ = false;
  if (buffered) return 0;
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_DIRECT) != 0)
    return 0;  // tmpfs and others: buffered I/O
  // Some file systems take the flag and refuse the I/O: probe one block.
  void* block = std::aligned_alloc(kIoAlign, kIoAlign);
  if (!block) {
    why = "out of host memory";
    return ENOMEM;
  }
  std::memset(block, 0, kIoAlign);
  direct_ = ::pwrite(fd_, block, kIoAlign, 0) == static_cast<ssize_t>(kIoAlign);
  std::free(block);
  if (!direct_) ::fcntl(fd_, F_SETFL, flags);
  return 0;
}

int64_t CacheFile::allocate(uint64_t bytes, uint64_t capacity) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    int64_t offset = it->first;
    uint64_t rest = it->second - bytes;
    free_.erase(it);
    if (rest) free_[offset + static_cast<int64_t>(bytes)] = rest;
    used_ += bytes;
    return offset;
  }
  if (capacity && end_ + bytes > capacity) return -1;
  int64_t offset = static_cast<int64_t>(end_);
  end_ += bytes;
  used_ += bytes;
  return offset;
}

void CacheFile::free(int64_t offset, uint64_t bytes) {
  used_ -= bytes;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + static_cast<int64_t>(bytes)) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + static_cast<int64_t>(prev->second) == offset) {
      prev->second += bytes;
      return;
    }
  }
  free_[offset] = bytes;
}

int CacheFile::write(const void* data, uint64_t bytes, int64_t offset) const {
  const char* p = static_cast<const char*>(data);
  while (bytes) {
    ssize_t n = ::pwrite(fd_, p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += n;
  }
  return 0;
}

int CacheFile::read(void* data, uint64_t bytes, int64_t offset) const {
  char* p = static_cast<char*>(data);
  while (bytes) {
    ssize_t n = ::pread(fd_, p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // past the end: the extent was never written
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += n;
  }
  return 0;
}

}  // namespace hector
