// The tensor cache of hector/tensor_cache.h: values in host memory or in the
// disk tier's file, written and read by a pool of I/O threads in chunks.
//
// One mutex guards the key map, the job queue, the file's extents and the
// statistics; copies and file I/O run outside it. An entry is shared with
// the jobs that use it, so a release while a write or read is in flight only
// marks it: whoever finishes last frees its memory and file space.
#include "hector/tensor_cache.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../error.h"
#include "../offload/device_copy.h"
#include "cache_direct.h"
#include "cache_file.h"
#include "host_pool.h"

using namespace hector;

namespace {

constexpr uint64_t kDefaultChunk = 8ull << 20;
constexpr uint32_t kDefaultThreads = 8;

// 64-bit hash of a value, 8 bytes per step (multiply-xorshift), so that the
// checksum mode costs far less than the copies it guards. Fed in pieces (a
// put hashes each chunk as it copies it): every piece but the last is a
// whole number of 8-byte words.
class Hash64 {
 public:
  explicit Hash64(uint64_t bytes) : h_(0x9e3779b97f4a7c15ull ^ bytes) {}
  void words(const void* data, uint64_t bytes) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
      uint64_t v;
      std::memcpy(&v, p + i, 8);
      mix(v);
    }
  }
  uint64_t finish(const void* data, uint64_t bytes) {
    words(data, bytes);
    uint64_t whole = bytes / 8 * 8, tail = 0;
    if (bytes > whole)
      std::memcpy(&tail, static_cast<const unsigned char*>(data) + whole, bytes - whole);
    mix(tail);
    return h_ ^ (h_ >> 29);
  }

 private:
  void mix(uint64_t v) {
    h_ ^= v * 0xff51afd7ed558ccdull;
    h_ = (h_ << 31 | h_ >> 33) * 0xc4ceb9fe1a85ec53ull;
  }
  uint64_t h_;
};

uint64_t hash_bytes(const void* data, uint64_t bytes) { return Hash64(bytes).finish(data, bytes); }

struct Entry {
  uint64_t bytes = 0;
  uint64_t refs = 1;
  char* host = nullptr;     // host copy (kIoAlign-aligned, size rounded up)
  uint64_t host_bytes = 0;  // charged to the host capacity
  int64_t offset = -1;      // file extent, -1: none
  uint64_t extent = 0;
  uint64_t hash = 0;
  bool on_disk = false;     // the write completed; `host` may still be held
  uint32_t chunks_left = 0; // write chunks not finished
  bool cancel = false;      // handed over or released: skip the rest
  int write_error = 0;      // errno of a failed chunk
  bool released = false;    // no key refers to it any more
  bool filling = true;      // its put is still copying the value in
  uint32_t readers = 0;     // copies from or into it in progress
  bool failed = false;      // its put could not copy the value in
  bool fail_next_read = false;  // for tests: its next read from the file fails
};
using EntryPtr = std::shared_ptr<Entry>;

// The chunks of one get from the file.
struct ReadBatch {
  uint32_t left = 0;
  int error = 0;
};

struct Job {
  EntryPtr entry;
  uint64_t offset = 0;  // within the value
  uint64_t bytes = 0;   // the chunk (reads: the value's bytes in it)
  ReadBatch* batch = nullptr;  // reads only
  char* out = nullptr;         // reads only
};

}  // namespace

struct hector_tensor_cache {
  hector_tensor_cache_config config{};
  CacheFile file;
  bool has_disk = false;

  std::mutex mu;
  std::condition_variable work;  // jobs queued, or stopping
  std::condition_variable done;  // a write finished or a read chunk done
  std::deque<Job> jobs;
  std::vector<std::thread> threads;
  bool stopping = false;
  uint64_t writes_in_flight = 0;
  uint64_t write_requests = 0;  // for config.fail_write
  bool warned = false;

  std::unordered_map<uint64_t, EntryPtr> entries;
  hector_tensor_cache_stats stats{};

  // Host blocks freed by released or written values, by size, kept for the
  // next puts (at most host_capacity bytes): fresh pages cost more than the
  // copy into them, and pinning (HECTOR_CACHE_PINNED) costs more still.
  std::multimap<uint64_t, char*> pool;
  uint64_t pooled = 0;
  std::unordered_set<char*> pinned_blocks;

  // The host pool made in the background (host_pool.h), once reserved. Its
  // blocks go back to it; without it, blocks go to `pool` above.
  HostPool host_pool;
  uint64_t pin_delay_us = 0;  // for tests
  uint64_t puts_pooled = 0, puts_unready = 0, puts_no_room = 0;

  // --- with `mu` held -------------------------------------------------
  // A block of at least `bytes` (a multiple of kIoAlign) in *size, or null.
  // `for_put`: counted in the pool's statistics of puts.
  char* take_block(uint64_t bytes, uint64_t* size, bool for_put = true) {
    if (host_pool.started()) {
      // A put never waits for the pool: waiting would stall the caller (the
      // thread that launches the step's kernels) for as long as a chunk's
      // pinning takes, where pageable memory costs only slower copies.
      *size = bytes;
      if (char* block = host_pool.allocate(bytes)) {
        puts_pooled += for_put;
        return block;
      }
      (host_pool.stats().making ? puts_unready : puts_no_room) += for_put;
      return static_cast<char*>(std::aligned_alloc(kIoAlign, bytes));
    }
    auto it = pool.lower_bound(bytes);
    if (it != pool.end() && it->first <= 2 * bytes) {  // not a much larger one
      char* block = it->second;
      *size = it->first;
      pooled -= it->first;
      pool.erase(it);
      return block;
    }
    *size = bytes;
    if (config.flags & HECTOR_CACHE_PINNED) {
      if (char* block = static_cast<char*>(offload::pinned_alloc(bytes))) {
        pinned_blocks.insert(block);
        return block;
      }
    }
    return static_cast<char*>(std::aligned_alloc(kIoAlign, bytes));
  }
  void drop_block(char* block) {
    if (host_pool.owns(block)) return;  // unmapped with the pool
    if (pinned_blocks.erase(block)) offload::pinned_free(block);
    else std::free(block);
  }
  void give_block(char* block, uint64_t size) {
    if (!block) return;
    if (host_pool.owns(block)) return host_pool.free(block, size);
    if (host_pool.started() || pooled + size > config.host_capacity) return drop_block(block);
    pool.emplace(size, block);
    pooled += size;
  }
  void free_host(Entry& e) {
    give_block(e.host, e.host_bytes);
    e.host = nullptr;
    stats.host_bytes -= e.host_bytes;
    e.host_bytes = 0;
  }
  void free_extent(Entry& e) {
    if (e.offset < 0) return;
    file.free(e.offset, e.extent);
    stats.disk_bytes = file.used();
    e.offset = -1;
  }
  // Frees what a released entry still holds once nothing uses it.
  void reclaim(Entry& e) {
    if (!e.released || e.readers || e.chunks_left) return;
    free_host(e);
    free_extent(e);
  }
  // The last chunk of a write is done.
  void finish_write(Entry& e) {
    --writes_in_flight;
    done.notify_all();
    if (e.released) return reclaim(e);
    if (e.cancel || e.write_error) {
      free_extent(e);  // the host copy stays the value
      if (e.write_error && !e.cancel) {
        ++stats.writes_failed;
        if (!warned) {
          warned = true;
          std::fprintf(stderr,
                       "hector tensor cache: a disk write failed (%s); the value stays "
                       "in host memory (later failures are counted in the statistics)\n",
                       std::strerror(e.write_error));
        }
      }
      return;
    }
    e.on_disk = true;
    if (!e.readers) free_host(e);
  }
  void release_locked(uint64_t key, const EntryPtr& e) {
    entries.erase(key);
    --stats.values;
    e->released = true;
    e->cancel = true;
    reclaim(*e);
  }

  // --- I/O threads ----------------------------------------------------
  void worker() {
    char* bounce = nullptr;  // reads land here first (O_DIRECT alignment)
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty()) break;
      Job job = std::move(jobs.front());
      jobs.pop_front();
      Entry& e = *job.entry;
      if (!job.batch) {  // a write chunk
        if (!e.cancel && !e.write_error) {
          bool injected = config.fail_write && ++write_requests == uint64_t(config.fail_write);
          lock.unlock();
          int err = injected ? EIO
                             : file.write(e.host + job.offset, job.bytes,
                                          e.offset + int64_t(job.offset));
          lock.lock();
          if (err) e.write_error = err;
          else stats.bytes_written += job.bytes;
        }
        if (--e.chunks_left == 0) finish_write(e);
        continue;
      }
      // a read chunk
      if (!bounce) bounce = static_cast<char*>(std::aligned_alloc(kIoAlign, chunk_bytes()));
      int err = ENOMEM;
      if (e.fail_next_read) {
        e.fail_next_read = false;
        err = EIO;
      } else if (bounce) {
        lock.unlock();
        err = file.read(bounce, align_up(job.bytes), e.offset + int64_t(job.offset));
        if (!err) std::memcpy(job.out + job.offset, bounce, job.bytes);
        lock.lock();
        if (!err) stats.bytes_read += job.bytes;
      }
      if (err && !job.batch->error) job.batch->error = err;
      --job.batch->left;
      done.notify_all();
    }
    std::free(bounce);
  }

  uint64_t chunk_bytes() const { return config.chunk_bytes; }
};

namespace {

int check_cache(hector_tensor_cache* cache, const char* fn) {
  if (!cache) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "%s: cache is NULL", fn);
  return HECTOR_OK;
}

}  // namespace

extern "C" int hector_tensor_cache_create(const hector_tensor_cache_config* config,
                                          hector_tensor_cache** out) {
  clear_error();
  if (!out) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_create: out is NULL");
  *out = nullptr;
  if (!config)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_create: config is NULL");
  if (config->flags & ~(HECTOR_CACHE_CHECKSUM | HECTOR_CACHE_NO_DIRECT_IO | HECTOR_CACHE_PINNED |
                        HECTOR_CACHE_RESERVE_POOL))
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_create: unknown flags 0x%x", config->flags);
  if (config->fail_write < 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_create: fail_write must be >= 0");
  std::unique_ptr<hector_tensor_cache> cache(new (std::nothrow) hector_tensor_cache());
  if (!cache) return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_create: out of host memory");
  cache->config = *config;
  cache->config.chunk_bytes =
      align_up(config->chunk_bytes ? config->chunk_bytes : kDefaultChunk);
  if (!cache->config.io_threads) cache->config.io_threads = kDefaultThreads;
  cache->config.directory = nullptr;  // not kept: the caller owns the string
  if (config->directory) {
    std::string why;
    if (int err = cache->file.open(config->directory,
                                   config->flags & HECTOR_CACHE_NO_DIRECT_IO, why))
      return fail(HECTOR_ERROR_IO, "hector_tensor_cache_create: %s: %s", why.c_str(),
                  std::strerror(err));
    cache->has_disk = true;
    cache->stats.direct_io = cache->file.direct();
    try {
      for (uint32_t i = 0; i < cache->config.io_threads; ++i)
        cache->threads.emplace_back([c = cache.get()] { c->worker(); });
    } catch (const std::system_error& e) {
      hector_tensor_cache_destroy(cache.release());
      return fail(HECTOR_ERROR_OUT_OF_MEMORY,
                  "hector_tensor_cache_create: cannot start the I/O threads (%s)", e.what());
    }
  }
  if (config->flags & HECTOR_CACHE_RESERVE_POOL) {
    if (int s = hector_tensor_cache_reserve_pool(cache.get(), 0, 0)) {
      std::string why = last_error();
      hector_tensor_cache_destroy(cache.release());
      return fail(s, "hector_tensor_cache_create: %s", why.c_str());
    }
  }
  *out = cache.release();
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_destroy(hector_tensor_cache* cache) {
  clear_error();
  if (!cache) return HECTOR_OK;
  cache->host_pool.stop();  // after the chunk it is making
  {
    std::lock_guard<std::mutex> lock(cache->mu);
    for (auto& [key, entry] : cache->entries) entry->cancel = true;
    cache->stopping = true;
  }
  cache->work.notify_all();
  for (std::thread& t : cache->threads) t.join();
  for (auto& [key, entry] : cache->entries) cache->drop_block(entry->host);
  for (auto& [size, block] : cache->pool) cache->drop_block(block);
  delete cache;
  return HECTOR_OK;
}

namespace {

bool copy_from_host(void* context, void* host, uint64_t offset, uint64_t len) {
  std::memcpy(host, static_cast<const char*>(context) + offset, len);
  return true;
}

int put_impl(hector_tensor_cache* cache, uint64_t key, uint64_t bytes, hector_cache_tier tier,
             CacheCopy copy_in, void* context) {
  if (int s = check_cache(cache, "hector_tensor_cache_put")) return s;
  if (tier != HECTOR_CACHE_HOST && tier != HECTOR_CACHE_DISK)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_put: unknown tier %d", tier);
  if (tier == HECTOR_CACHE_DISK && !cache->has_disk)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_put: the cache has no disk tier (no directory)");
  std::unique_lock<std::mutex> lock(cache->mu);
  if (auto it = cache->entries.find(key); it != cache->entries.end()) {
    Entry& e = *it->second;
    if (e.bytes != bytes)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "hector_tensor_cache_put: key %llu holds %llu bytes, not %llu",
                  (unsigned long long)key, (unsigned long long)e.bytes,
                  (unsigned long long)bytes);
    ++e.refs;
    ++cache->stats.deduplicated;
    return HECTOR_OK;
  }
  uint64_t rounded = align_up(bytes);
  if (cache->stats.host_bytes + rounded > cache->config.host_capacity)
    return fail(HECTOR_ERROR_OUT_OF_MEMORY,
                "hector_tensor_cache_put: the host tier is full (%llu of %llu bytes held, "
                "%llu more needed); nothing was stored",
                (unsigned long long)cache->stats.host_bytes,
                (unsigned long long)cache->config.host_capacity,
                (unsigned long long)rounded);
  EntryPtr e = std::make_shared<Entry>();
  e->bytes = bytes;
  if (rounded) {
    uint64_t size = 0;
    e->host = cache->take_block(rounded, &size);
    if (!e->host)
      return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_put: out of host memory");
    e->host_bytes = size;
    cache->stats.host_bytes += size;
  }
  cache->entries.emplace(key, e);
  ++cache->stats.values;
  bool checksum = cache->config.flags & HECTOR_CACHE_CHECKSUM;
  bool to_disk = tier == HECTOR_CACHE_DISK && bytes;
  if (to_disk) {
    e->offset = cache->file.allocate(rounded, cache->config.disk_capacity);
    if (e->offset >= 0) {
      e->extent = rounded;
      cache->stats.disk_bytes = cache->file.used();
    } else {
      e->write_error = ENOSPC;  // the disk tier's capacity: keep it in host memory
    }
    ++cache->writes_in_flight;
    e->chunks_left = 1;  // this put, until every chunk is queued
  }
  // Chunk by chunk, the copy (and the hash) run without the lock and each
  // chunk's write is queued as soon as it is copied, so the disk starts
  // before a large value is in. A get of the key waits until it is filled;
  // a release meanwhile leaves its memory to this call (the pin in
  // `readers`).
  ++e->readers;
  Hash64 hash(bytes);
  uint64_t chunk = cache->chunk_bytes();
  for (uint64_t off = 0; off < rounded; off += chunk) {
    uint64_t len = std::min(chunk, rounded - off), copy = std::min(len, bytes - off);
    lock.unlock();
    if (copy && !copy_in(context, e->host + off, off, copy)) {
      // Nothing is stored: the key goes, the chunks queued are cancelled,
      // and a get that waited for the value is told.
      lock.lock();
      e->failed = true;
      e->filling = false;
      --e->readers;
      cache->done.notify_all();
      if (auto it = cache->entries.find(key); it != cache->entries.end() && it->second == e)
        cache->release_locked(key, e);
      if (to_disk && --e->chunks_left == 0) cache->finish_write(*e);
      return fail(HECTOR_ERROR_CUDA, "hector_tensor_cache_put: copying key %llu in: %s",
                  (unsigned long long)key, last_error());
    }
    std::memset(e->host + off + copy, 0, len - copy);
    if (checksum && off + len < rounded) hash.words(e->host + off, copy);
    else if (checksum) e->hash = hash.finish(e->host + off, copy);
    lock.lock();
    if (to_disk && e->offset >= 0 && !e->cancel) {
      cache->jobs.push_back(Job{e, off, len, nullptr, nullptr});
      ++e->chunks_left;
      cache->work.notify_one();
    }
  }
  if (checksum && !rounded) e->hash = hash.finish(nullptr, 0);
  e->filling = false;
  --e->readers;
  cache->done.notify_all();
  if (to_disk && --e->chunks_left == 0) cache->finish_write(*e);
  else cache->reclaim(*e);  // released meanwhile: frees it once unused
  return HECTOR_OK;
}

}  // namespace

extern "C" int hector_tensor_cache_put(hector_tensor_cache* cache, uint64_t key,
                                       const void* data, uint64_t bytes,
                                       hector_cache_tier tier) {
  clear_error();
  if (bytes && !data)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_put: data is NULL");
  return put_impl(cache, key, bytes, tier, copy_from_host, const_cast<void*>(data));
}

int hector::tensor_cache_put_from(hector_tensor_cache* cache, uint64_t key, uint64_t bytes,
                                  hector_cache_tier tier, CacheCopy copy_in, void* context) {
  clear_error();
  return put_impl(cache, key, bytes, tier, copy_in, context);
}

namespace {

// One get, in two halves, so that several can be in flight: begin_read
// (under the lock) checks the key and queues the chunks of a value on disk
// on the I/O threads; finish_read (without it) copies a value in host memory,
// or waits for its chunks, and verifies its checksum.
struct PendingRead {
  uint64_t key = 0;
  char* out = nullptr;
  uint64_t bytes = 0;

  EntryPtr entry;      // pinned (a reader) between the halves
  bool from_disk = false;
  ReadBatch batch;     // its chunks on the I/O threads (from_disk)
  int status = HECTOR_OK;
  std::string error;   // the failure's message (several may fail in a batch)

  int failed(int s, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    char message[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    error = message;
    return status = s;
  }
};

// `lock` holds cache->mu (it is released while waiting for a put to fill).
void begin_read(hector_tensor_cache* cache, std::unique_lock<std::mutex>& lock, PendingRead& r) {
  unsigned long long key = r.key;
  if (r.bytes && !r.out) {
    r.failed(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_get: out is NULL");
    return;
  }
  auto it = cache->entries.find(r.key);
  if (it == cache->entries.end()) {
    r.failed(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_get: no value under key %llu",
             key);
    return;
  }
  EntryPtr e = it->second;
  if (e->bytes != r.bytes) {
    r.failed(HECTOR_ERROR_INVALID_ARGUMENT,
             "hector_tensor_cache_get: key %llu holds %llu bytes, not %llu", key,
             (unsigned long long)e->bytes, (unsigned long long)r.bytes);
    return;
  }
  cache->done.wait(lock, [&] { return !e->filling; });
  if (e->failed) {
    r.failed(HECTOR_ERROR_IO, "hector_tensor_cache_get: key %llu: its put failed", key);
    return;
  }
  ++e->readers;
  r.entry = e;
  if (!e->on_disk) {
    if (e->chunks_left && !e->cancel) {
      // Needed while its write is in flight: hand the host copy over and
      // keep the value there.
      e->cancel = true;
      ++cache->stats.handed_over;
    }
    return;
  }
  r.from_disk = true;
  uint64_t chunk = cache->chunk_bytes();
  for (uint64_t off = 0; off < r.bytes; off += chunk) {
    cache->jobs.push_back(Job{e, off, std::min(chunk, r.bytes - off), &r.batch, r.out});
    ++r.batch.left;
  }
  cache->work.notify_all();
}

// Without the lock held. Sets r.status.
void finish_read(hector_tensor_cache* cache, PendingRead& r) {
  if (r.status != HECTOR_OK) return;
  Entry& e = *r.entry;
  unsigned long long key = r.key;
  uint64_t bytes = r.bytes;
  bool checksum = cache->config.flags & HECTOR_CACHE_CHECKSUM;
  int err = 0;
  std::unique_lock<std::mutex> lock(cache->mu, std::defer_lock);
  if (!r.from_disk) {
    if (bytes) std::memcpy(r.out, e.host, bytes);  // pinned by `readers`
    lock.lock();
  } else {
    lock.lock();
    cache->done.wait(lock, [&] { return r.batch.left == 0; });
    err = r.batch.error;
  }
  --e.readers;
  if (e.on_disk && !e.readers && !e.released) cache->free_host(e);
  cache->reclaim(e);
  if (err) {
    r.failed(HECTOR_ERROR_IO, "hector_tensor_cache_get: reading key %llu: %s", key,
             std::strerror(err));
    return;
  }
  uint64_t expected = e.hash;
  lock.unlock();
  if (checksum && hash_bytes(r.out, bytes) != expected) {
    std::lock_guard<std::mutex> relock(cache->mu);
    ++cache->stats.checksum_failures;
    r.failed(HECTOR_ERROR_IO,
             "hector_tensor_cache_get: key %llu read back does not match its checksum", key);
  }
}

int get_one(hector_tensor_cache* cache, PendingRead& r) {
  if (int s = check_cache(cache, "hector_tensor_cache_get")) return s;
  {
    std::unique_lock<std::mutex> lock(cache->mu);
    begin_read(cache, lock, r);
  }
  finish_read(cache, r);
  return r.status ? fail(r.status, "%s", r.error.c_str()) : HECTOR_OK;
}

}  // namespace

extern "C" int hector_tensor_cache_get(hector_tensor_cache* cache, uint64_t key, void* out,
                                       uint64_t bytes) {
  clear_error();
  PendingRead r;
  r.key = key;
  r.out = static_cast<char*>(out);
  r.bytes = bytes;
  return get_one(cache, r);
}

extern "C" int hector_tensor_cache_get_many(hector_tensor_cache* cache, uint64_t n,
                                            const uint64_t* keys, void* const* outs,
                                            const uint64_t* bytes, int* statuses) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_get_many")) return s;
  if (n && (!keys || !outs || !bytes))
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_get_many: keys, outs or bytes is NULL");
  std::vector<PendingRead> reads;
  try {
    reads.resize(n);  // never resized again: the I/O threads hold pointers into it
  } catch (const std::bad_alloc&) {
    return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_get_many: out of host memory");
  }
  {
    std::unique_lock<std::mutex> lock(cache->mu);
    for (uint64_t i = 0; i < n; ++i) {
      reads[i].key = keys[i];
      reads[i].out = static_cast<char*>(outs[i]);
      reads[i].bytes = bytes[i];
      begin_read(cache, lock, reads[i]);
    }
  }
  // Values in host memory are copied while the disk's chunks are read.
  for (PendingRead& r : reads)
    if (!r.from_disk) finish_read(cache, r);
  for (PendingRead& r : reads)
    if (r.from_disk) finish_read(cache, r);
  uint64_t failures = 0, first = n;
  for (uint64_t i = 0; i < n; ++i) {
    if (statuses) statuses[i] = reads[i].status;
    if (reads[i].status == HECTOR_OK) continue;
    ++failures;
    if (first == n) first = i;
  }
  if (!failures) return HECTOR_OK;
  return fail(reads[first].status,
              "hector_tensor_cache_get_many: read %llu of %llu (key %llu) failed: %s "
              "(%llu of the %llu reads failed; their values stay stored)",
              (unsigned long long)first, (unsigned long long)n,
              (unsigned long long)reads[first].key, reads[first].error.c_str(),
              (unsigned long long)failures, (unsigned long long)n);
}

struct hector_tensor_cache_read {
  hector_tensor_cache* cache;
  PendingRead read;
};

extern "C" int hector_tensor_cache_get_async(hector_tensor_cache* cache, uint64_t key,
                                             void* out, uint64_t bytes,
                                             hector_tensor_cache_read** read) {
  clear_error();
  if (!read)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_get_async: read is NULL");
  *read = nullptr;
  if (int s = check_cache(cache, "hector_tensor_cache_get_async")) return s;
  std::unique_ptr<hector_tensor_cache_read> r(new (std::nothrow) hector_tensor_cache_read{});
  if (!r)
    return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_get_async: out of host memory");
  r->cache = cache;
  r->read.key = key;
  r->read.out = static_cast<char*>(out);
  r->read.bytes = bytes;
  {
    std::unique_lock<std::mutex> lock(cache->mu);
    begin_read(cache, lock, r->read);
  }
  if (r->read.status) return fail(r->read.status, "%s", r->read.error.c_str());
  *read = r.release();
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_wait(hector_tensor_cache_read* read) {
  clear_error();
  if (!read) return HECTOR_OK;
  std::unique_ptr<hector_tensor_cache_read> r(read);
  finish_read(r->cache, r->read);
  return r->read.status ? fail(r->read.status, "%s", r->read.error.c_str()) : HECTOR_OK;
}

extern "C" int hector_tensor_cache_release(hector_tensor_cache* cache, uint64_t key) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_release")) return s;
  std::lock_guard<std::mutex> lock(cache->mu);
  auto it = cache->entries.find(key);
  if (it == cache->entries.end())
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_release: no value under key %llu", (unsigned long long)key);
  EntryPtr e = it->second;
  if (--e->refs == 0) cache->release_locked(key, e);
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_where(hector_tensor_cache* cache, uint64_t key,
                                         hector_cache_tier* tier) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_where")) return s;
  if (!tier) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_where: tier is NULL");
  std::lock_guard<std::mutex> lock(cache->mu);
  auto it = cache->entries.find(key);
  if (it == cache->entries.end())
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_where: no value under key %llu",
                (unsigned long long)key);
  *tier = it->second->on_disk ? HECTOR_CACHE_DISK : HECTOR_CACHE_HOST;
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_flush(hector_tensor_cache* cache) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_flush")) return s;
  std::unique_lock<std::mutex> lock(cache->mu);
  cache->done.wait(lock, [&] { return cache->writes_in_flight == 0; });
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_stats_get(hector_tensor_cache* cache,
                                             hector_tensor_cache_stats* stats) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_stats_get")) return s;
  if (!stats)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_stats_get: stats is NULL");
  std::lock_guard<std::mutex> lock(cache->mu);
  *stats = cache->stats;
  return HECTOR_OK;
}

//===----------------------------------------------------------------------===//
// The host pool, made in the background
//===----------------------------------------------------------------------===//

namespace {
constexpr uint64_t kDefaultPoolChunk = 256ull << 20;
}

extern "C" int hector_tensor_cache_reserve_pool(hector_tensor_cache* cache, uint64_t bytes,
                                                uint64_t chunk_bytes) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_reserve_pool")) return s;
  std::lock_guard<std::mutex> lock(cache->mu);
  if (cache->host_pool.started())
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_reserve_pool: the cache has a host pool already");
  uint64_t capacity = cache->config.host_capacity / kIoAlign * kIoAlign;
  if (!bytes || bytes > capacity) bytes = capacity;
  uint64_t chunk = align_up(chunk_bytes ? chunk_bytes : kDefaultPoolChunk);
  bytes = align_up(bytes);
  if (!bytes)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_reserve_pool: the host capacity is under 4 KiB");
  bool pin = cache->config.flags & HECTOR_CACHE_PINNED;
  std::string why;
  if (int err = cache->host_pool.start(bytes, std::min(chunk, bytes),
                                       pin ? offload::pin_range : nullptr,
                                       pin ? offload::unpin_range : nullptr,
                                       cache->pin_delay_us, why))
    return fail(err == ENOMEM ? HECTOR_ERROR_OUT_OF_MEMORY : HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_reserve_pool: %s (%llu bytes): %s", why.c_str(),
                (unsigned long long)bytes, std::strerror(err));
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_pool_wait(hector_tensor_cache* cache) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_pool_wait")) return s;
  {
    std::lock_guard<std::mutex> lock(cache->mu);
    if (!cache->host_pool.started()) return HECTOR_OK;
  }
  cache->host_pool.wait_ready();  // the pool is never unmade while the cache lives
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_pool_stats_get(hector_tensor_cache* cache,
                                                  hector_tensor_cache_pool_stats* stats) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_pool_stats_get")) return s;
  if (!stats)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_pool_stats_get: stats is NULL");
  std::lock_guard<std::mutex> lock(cache->mu);
  hector_tensor_cache_pool_stats out{};
  if (cache->host_pool.started()) {
    HostPool::Stats p = cache->host_pool.stats();
    out.bytes = p.bytes;
    out.bytes_ready = p.bytes_ready;
    out.bytes_pinned = p.bytes_pinned;
    out.pin_ns = p.pin_ns;
    out.making = p.making;
  }
  out.puts_pooled = cache->puts_pooled;
  out.puts_unready = cache->puts_unready;
  out.puts_no_room = cache->puts_no_room;
  *stats = out;
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_test_pin_delay(hector_tensor_cache* cache, uint64_t us) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_test_pin_delay")) return s;
  std::lock_guard<std::mutex> lock(cache->mu);
  cache->pin_delay_us = us;
  return HECTOR_OK;
}

extern "C" int hector_tensor_cache_test_fail_read(hector_tensor_cache* cache, uint64_t key) {
  clear_error();
  if (int s = check_cache(cache, "hector_tensor_cache_test_fail_read")) return s;
  std::lock_guard<std::mutex> lock(cache->mu);
  auto it = cache->entries.find(key);
  if (it == cache->entries.end())
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_test_fail_read: no value under key %llu",
                (unsigned long long)key);
  it->second->fail_next_read = true;
  return HECTOR_OK;
}

//===----------------------------------------------------------------------===//
// Asynchronous puts and gets (cache_direct.h), for copies on GPU streams
//===----------------------------------------------------------------------===//

struct hector::CacheFill {
  hector_tensor_cache* cache;
  uint64_t key;
  EntryPtr entry;
  bool to_disk;
};

struct hector::CacheRead {
  hector_tensor_cache* cache;
  EntryPtr entry;
};

int hector::tensor_cache_reserve(hector_tensor_cache* cache, uint64_t key, uint64_t bytes,
                                 hector_cache_tier tier, void** host, CacheFill** fill) {
  clear_error();
  *host = nullptr;
  *fill = nullptr;
  if (int s = check_cache(cache, "hector_tensor_cache_put")) return s;
  if (tier != HECTOR_CACHE_HOST && tier != HECTOR_CACHE_DISK)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_put: unknown tier %d", tier);
  if (tier == HECTOR_CACHE_DISK && !cache->has_disk)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_put: the cache has no disk tier (no directory)");
  std::lock_guard<std::mutex> lock(cache->mu);
  if (auto it = cache->entries.find(key); it != cache->entries.end()) {
    Entry& e = *it->second;
    if (e.bytes != bytes)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "hector_tensor_cache_put: key %llu holds %llu bytes, not %llu",
                  (unsigned long long)key, (unsigned long long)e.bytes,
                  (unsigned long long)bytes);
    ++e.refs;
    ++cache->stats.deduplicated;
    return HECTOR_OK;
  }
  uint64_t rounded = align_up(bytes);
  if (cache->stats.host_bytes + rounded > cache->config.host_capacity)
    return fail(HECTOR_ERROR_OUT_OF_MEMORY,
                "hector_tensor_cache_put: the host tier is full (%llu of %llu bytes held, "
                "%llu more needed); nothing was stored",
                (unsigned long long)cache->stats.host_bytes,
                (unsigned long long)cache->config.host_capacity,
                (unsigned long long)rounded);
  std::unique_ptr<CacheFill> f(new (std::nothrow) CacheFill{cache, key, nullptr, false});
  if (!f) return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_put: out of host memory");
  EntryPtr e = std::make_shared<Entry>();
  e->bytes = bytes;
  if (rounded) {
    uint64_t size = 0;
    e->host = cache->take_block(rounded, &size);
    if (!e->host)
      return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_put: out of host memory");
    e->host_bytes = size;
    cache->stats.host_bytes += size;
    std::memset(e->host + bytes, 0, rounded - bytes);  // the tail a disk write reads
  }
  cache->entries.emplace(key, e);
  ++cache->stats.values;
  f->to_disk = tier == HECTOR_CACHE_DISK && bytes;
  if (f->to_disk) {
    e->offset = cache->file.allocate(rounded, cache->config.disk_capacity);
    if (e->offset >= 0) {
      e->extent = rounded;
      cache->stats.disk_bytes = cache->file.used();
    } else {
      e->write_error = ENOSPC;  // the disk tier's capacity: keep it in host memory
    }
    ++cache->writes_in_flight;
    e->chunks_left = 1;  // until committed
  }
  ++e->readers;  // the caller's copy into it
  f->entry = e;
  *host = e->host;
  *fill = f.release();
  return HECTOR_OK;
}

void hector::tensor_cache_commit(CacheFill* fill, bool ok) {
  std::unique_ptr<CacheFill> f(fill);
  hector_tensor_cache* cache = f->cache;
  Entry& e = *f->entry;
  uint64_t hash = 0;
  if (ok && (cache->config.flags & HECTOR_CACHE_CHECKSUM))
    hash = hash_bytes(e.host, e.bytes);
  std::lock_guard<std::mutex> lock(cache->mu);
  if (!ok) {
    e.failed = true;
    if (auto it = cache->entries.find(f->key); it != cache->entries.end() && it->second == f->entry)
      cache->release_locked(f->key, f->entry);
  } else {
    e.hash = hash;
    if (f->to_disk && e.offset >= 0 && !e.cancel) {
      uint64_t rounded = align_up(e.bytes), chunk = cache->chunk_bytes();
      for (uint64_t off = 0; off < rounded; off += chunk) {
        cache->jobs.push_back(Job{f->entry, off, std::min(chunk, rounded - off), nullptr, nullptr});
        ++e.chunks_left;
      }
      cache->work.notify_all();
    }
  }
  e.filling = false;
  --e.readers;
  cache->done.notify_all();
  if (f->to_disk && --e.chunks_left == 0) cache->finish_write(e);
  else cache->reclaim(e);
}

int hector::tensor_cache_read_begin(hector_tensor_cache* cache, uint64_t key, uint64_t bytes,
                                    const void** host, CacheRead** read) {
  clear_error();
  *host = nullptr;
  *read = nullptr;
  if (int s = check_cache(cache, "hector_tensor_cache_get")) return s;
  std::unique_lock<std::mutex> lock(cache->mu);
  auto it = cache->entries.find(key);
  if (it == cache->entries.end())
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_tensor_cache_get: no value under key %llu",
                (unsigned long long)key);
  EntryPtr e = it->second;
  if (e->bytes != bytes)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_tensor_cache_get: key %llu holds %llu bytes, not %llu",
                (unsigned long long)key, (unsigned long long)e->bytes,
                (unsigned long long)bytes);
  cache->done.wait(lock, [&] { return !e->filling; });
  if (e->failed)
    return fail(HECTOR_ERROR_IO, "hector_tensor_cache_get: key %llu: its put failed",
                (unsigned long long)key);
  if (e->on_disk) return kCacheOnDisk;
  if (e->chunks_left && !e->cancel) {
    e->cancel = true;  // handed over: the rest of its write is cancelled
    ++cache->stats.handed_over;
  }
  ++e->readers;
  std::unique_ptr<CacheRead> r(new (std::nothrow) CacheRead{cache, e});
  bool corrupt = false;
  if (r && (cache->config.flags & HECTOR_CACHE_CHECKSUM)) {
    lock.unlock();
    corrupt = hash_bytes(e->host, bytes) != e->hash;
    lock.lock();
  }
  if (!r || corrupt) {
    --e->readers;
    cache->reclaim(*e);
    if (!r) return fail(HECTOR_ERROR_OUT_OF_MEMORY, "hector_tensor_cache_get: out of host memory");
    ++cache->stats.checksum_failures;
    return fail(HECTOR_ERROR_IO,
                "hector_tensor_cache_get: key %llu read back does not match its checksum",
                (unsigned long long)key);
  }
  *host = e->host;
  *read = r.release();
  return HECTOR_OK;
}

void hector::tensor_cache_read_end(CacheRead* read) {
  std::unique_ptr<CacheRead> r(read);
  std::lock_guard<std::mutex> lock(r->cache->mu);
  --r->entry->readers;
  r->cache->reclaim(*r->entry);
}

void* hector::tensor_cache_take_host(hector_tensor_cache* cache, uint64_t bytes, uint64_t* size) {
  clear_error();
  std::lock_guard<std::mutex> lock(cache->mu);
  void* block = cache->take_block(align_up(bytes), size, /*for_put=*/false);
  if (!block)
    fail(HECTOR_ERROR_OUT_OF_MEMORY, "tensor cache: no host memory for a read of %llu bytes",
         (unsigned long long)bytes);
  return block;
}

void hector::tensor_cache_give_host(hector_tensor_cache* cache, void* block, uint64_t size) {
  std::lock_guard<std::mutex> lock(cache->mu);
  cache->give_block(static_cast<char*>(block), size);
}

uint64_t hector::tensor_cache_pinned_piece(hector_tensor_cache* cache, const void* host) {
  // No lock: the pool's region is fixed before any block is handed out.
  return cache->host_pool.pinned_piece(host);
}
