// The disk tier's file: one unlinked file per cache, space handed out in
// 4 KiB-aligned extents, read and written with positioned I/O (O_DIRECT
// where the file system takes it).
#ifndef HECTOR_RUNTIME_TENSOR_CACHE_CACHE_FILE_H
#define HECTOR_RUNTIME_TENSOR_CACHE_CACHE_FILE_H

#include <cstdint>
#include <map>
#include <string>

namespace hector {

// O_DIRECT's alignment of buffers, offsets and lengths (the largest logical
// block size in use; 512-byte devices take it too).
constexpr uint64_t kIoAlign = 4096;

inline uint64_t align_up(uint64_t bytes) {
  return (bytes + kIoAlign - 1) / kIoAlign * kIoAlign;
}

class CacheFile {
 public:
  CacheFile() = default;
  CacheFile(const CacheFile&) = delete;
  CacheFile& operator=(const CacheFile&) = delete;
  ~CacheFile();

  // Creates the file in `directory` and unlinks it. O_DIRECT unless
  // `buffered` or the file system refuses it (a probe write tells).
  // Returns 0 or an errno, with `why` saying which step failed.
  int open(const std::string& directory, bool buffered, std::string& why);
  bool direct() const { return direct_; }

  // An extent of `bytes` (a multiple of kIoAlign), or -1 when `capacity`
  // (0: none) would be passed. First fit over freed extents, else the end.
  int64_t allocate(uint64_t bytes, uint64_t capacity);
  void free(int64_t offset, uint64_t bytes);
  uint64_t used() const { return used_; }

  // Whole transfers (retrying short counts and EINTR); 0 or an errno.
  // Buffers, offsets and lengths are kIoAlign-aligned.
  int write(const void* data, uint64_t bytes, int64_t offset) const;
  int read(void* data, uint64_t bytes, int64_t offset) const;

 private:
  int fd_ = -1;
  bool direct_ = false;
  uint64_t end_ = 0;   // file size handed out so far
  uint64_t used_ = 0;  // bytes in live extents
  std::map<int64_t, uint64_t> free_;  // offset -> bytes, coalesced
};

}  // namespace hector

#endif
