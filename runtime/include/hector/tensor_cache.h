/* Hector runtime: a tensor cache with a host tier and a disk tier, where
 * training keeps the values it saves for the backward pass when GPU memory
 * is short (docs/offload.md).
 *
 * Values are byte ranges stored under the caller's 64-bit keys. A value put
 * in the disk tier is first copied into host memory (so the caller may reuse
 * its buffer at once), then written to one file by a pool of I/O threads in
 * chunks, with O_DIRECT where the file system supports it; its host copy is
 * freed when the write completes. Freed host memory is kept for the next
 * values (up to the host capacity), so a training loop stops paying for
 * fresh pages after its first step. Reading it back waits for nothing that is
 * not needed:
 *  - a value whose write has not completed is handed over from its host copy
 *    and the rest of the write is cancelled (the value then stays in host
 *    memory);
 *  - a value on disk is read by the I/O threads in parallel chunks.
 * Nothing is lost: a write that fails (an I/O error, a full disk, the disk
 * tier's capacity) leaves the value in host memory, counted in the
 * statistics and reported once on stderr; a put that finds the host tier
 * full fails with HECTOR_ERROR_OUT_OF_MEMORY and stores nothing, so the
 * caller keeps its value. With HECTOR_CACHE_CHECKSUM every value is hashed
 * when put and checked when read; a mismatch fails the read with
 * HECTOR_ERROR_IO.
 *
 * A key put again while stored is deduplicated: the value is kept once and
 * reference counted (the second put must give the same size), and each put
 * is matched by one release. All functions are thread-safe; the usual
 * conventions of hector/runtime.h hold (status codes, hector_last_error).
 */
#ifndef HECTOR_TENSOR_CACHE_H
#define HECTOR_TENSOR_CACHE_H

#include <stdint.h>

#include "hector/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hector_tensor_cache hector_tensor_cache;

typedef enum hector_cache_tier {
  HECTOR_CACHE_HOST = 0, /* host memory */
  HECTOR_CACHE_DISK = 1  /* a file in the configured directory */
} hector_cache_tier;

/* hector_tensor_cache_config.flags */
#define HECTOR_CACHE_CHECKSUM 1u    /* hash every value, verify every read */
#define HECTOR_CACHE_NO_DIRECT_IO 2u /* buffered file I/O even where O_DIRECT works */
#define HECTOR_CACHE_PINNED 4u       /* host memory pinned for the GPU (page-locked, where a
                                        CUDA driver is loaded): copies from and to device
                                        memory run at full PCIe speed */
#define HECTOR_CACHE_RESERVE_POOL 8u /* at creation, start making the host pool of the whole
                                        host capacity in the background, as
                                        hector_tensor_cache_reserve_pool(cache, 0, 0) */

typedef struct hector_tensor_cache_config {
  const char* directory;  /* the disk tier's directory; NULL: no disk tier */
  uint64_t host_capacity; /* bytes of host memory the cache may hold, host
                             copies of values being written included */
  uint64_t disk_capacity; /* bytes the disk tier's file may use; 0: no limit
                             but the file system's */
  uint64_t chunk_bytes;   /* largest I/O request; 0: 8 MiB (rounded up to 4 KiB) */
  uint32_t io_threads;    /* disk tier threads; 0: 8 */
  uint32_t flags;         /* HECTOR_CACHE_* */
  int64_t fail_write;     /* for tests: the n-th disk write request (counting
                             from 1) fails as an I/O error; 0: none */
} hector_tensor_cache_config;

typedef struct hector_tensor_cache_stats {
  uint64_t values;             /* stored values (deduplicated) */
  uint64_t host_bytes;         /* host memory held, write buffers included */
  uint64_t disk_bytes;         /* file space held (4 KiB-aligned extents) */
  uint64_t bytes_written;      /* to the file, completed requests */
  uint64_t bytes_read;         /* from the file */
  uint64_t deduplicated;       /* puts of a key already stored */
  uint64_t handed_over;        /* reads served from a write still in flight */
  uint64_t writes_failed;      /* values kept in host memory after a failed write */
  uint64_t checksum_failures;  /* reads whose data did not match its hash */
  uint32_t direct_io;          /* 1 if the file is opened with O_DIRECT */
  uint32_t reserved;
} hector_tensor_cache_stats;

/* Creates a cache. With a directory, the disk tier's file is created there
 * and unlinked at once (it never outlives the cache). Fails with
 * INVALID_ARGUMENT (bad configuration), IO (the directory cannot hold the
 * file) or OUT_OF_MEMORY. */
HECTOR_API int hector_tensor_cache_create(const hector_tensor_cache_config* config,
                                          hector_tensor_cache** out);

/* Waits for the writes in flight, then frees everything. NULL is fine. */
HECTOR_API int hector_tensor_cache_destroy(hector_tensor_cache* cache);

/* Stores a copy of [data, data + bytes) under `key` in `tier` (bytes may be
 * 0). Returns before a disk write completes. A stored key gets one more
 * reference instead (`bytes` must match; `data` is not read). Fails with
 * INVALID_ARGUMENT (no disk tier, size mismatch) or OUT_OF_MEMORY (the host
 * tier is full: nothing is stored). */
HECTOR_API int hector_tensor_cache_put(hector_tensor_cache* cache, uint64_t key,
                                       const void* data, uint64_t bytes,
                                       hector_cache_tier tier);

/* Copies the value of `key` into [out, out + bytes); `bytes` must be its
 * size. Fails with INVALID_ARGUMENT (unknown key, size mismatch) or IO (a
 * read error or a checksum mismatch: the value stays stored). */
HECTOR_API int hector_tensor_cache_get(hector_tensor_cache* cache, uint64_t key,
                                       void* out, uint64_t bytes);

/* Drops one reference to `key`; the last frees its memory and file space
 * (cancelling a write in flight). Fails with INVALID_ARGUMENT (unknown key). */
HECTOR_API int hector_tensor_cache_release(hector_tensor_cache* cache, uint64_t key);

/* Where `key` is now: HECTOR_CACHE_DISK once its write has completed, else
 * HECTOR_CACHE_HOST. Fails with INVALID_ARGUMENT (unknown key). */
HECTOR_API int hector_tensor_cache_where(hector_tensor_cache* cache, uint64_t key,
                                         hector_cache_tier* tier);

/* Waits until no write is in flight. */
HECTOR_API int hector_tensor_cache_flush(hector_tensor_cache* cache);

HECTOR_API int hector_tensor_cache_stats_get(hector_tensor_cache* cache,
                                             hector_tensor_cache_stats* stats);

/* --- Reads of several values at once --------------------------------------
 *
 * The chunks of every value on disk that these reads need are queued on the
 * I/O threads together, so several values come off the disk at once instead
 * of one after another; values in host memory are copied by the caller's
 * thread meanwhile. */

/* n gets at once: value keys[i] into [outs[i], outs[i] + bytes[i]). Every
 * read runs, whatever the others do; `statuses` (NULL: not wanted) gets each
 * one's status. Returns HECTOR_OK, or the status of the first read that
 * failed, with hector_last_error() naming its key and position and how many
 * failed. A failed read leaves its value stored (nothing is lost). */
HECTOR_API int hector_tensor_cache_get_many(hector_tensor_cache* cache, uint64_t n,
                                            const uint64_t* keys, void* const* outs,
                                            const uint64_t* bytes, int* statuses);

/* An asynchronous get: starts reading `key` into [out, out + bytes) and
 * returns; hector_tensor_cache_wait completes it. Reads started one after
 * another run together. Fails at once as hector_tensor_cache_get does for
 * an unknown key or a size mismatch (*read is then NULL). Every read
 * started must be waited for, before the cache is destroyed. */
typedef struct hector_tensor_cache_read hector_tensor_cache_read;
HECTOR_API int hector_tensor_cache_get_async(hector_tensor_cache* cache, uint64_t key,
                                             void* out, uint64_t bytes,
                                             hector_tensor_cache_read** read);
/* Waits for `read`, frees it, and returns its status (IO: a read error or a
 * checksum mismatch; the value stays stored). NULL is fine. */
HECTOR_API int hector_tensor_cache_wait(hector_tensor_cache_read* read);

/* --- The host pool, made in the background --------------------------------
 *
 * Pinning host memory costs about 0.6 s per GiB (H100 machines), far more
 * than the copies into it. The host pool is one region of host memory that
 * a background thread makes ready chunk by chunk, from the moment it is
 * reserved (before the first training step): pinned with HECTOR_CACHE_PINNED
 * where a CUDA driver is loaded, else its pages faulted in. Puts take their
 * host blocks from the part made so far. A put that arrives before a block
 * of its size is ready does not wait: it takes pageable memory (freed, not
 * kept, when the value goes), so no caller, and no stream a caller feeds,
 * ever waits for pinning; it is counted in puts_unready. */

typedef struct hector_tensor_cache_pool_stats {
  uint64_t bytes;          /* the pool's size; 0: no pool */
  uint64_t bytes_ready;    /* made so far */
  uint64_t bytes_pinned;   /* of those, page-locked by the CUDA driver */
  uint64_t pin_ns;         /* the background thread's time making them */
  uint64_t puts_pooled;    /* puts whose host block came from the pool */
  uint64_t puts_unready;   /* puts that came before a block was ready: pageable memory */
  uint64_t puts_no_room;   /* puts the finished pool had no room for: pageable memory */
  uint32_t making;         /* 1 while the background thread is at work */
  uint32_t reserved;
} hector_tensor_cache_pool_stats;

/* Starts making a host pool of `bytes` (0, or more than the host capacity:
 * the host capacity; rounded to 4 KiB) in chunks of `chunk_bytes` (0: 256
 * MiB; rounded up to 4 KiB) on a background thread, and returns at once.
 * The pool is aligned to its chunks; a value that fits in one never crosses
 * two, and device copies of larger ones are split at their bounds (the
 * driver refuses one copy across two registrations). One pool per cache: fails with INVALID_ARGUMENT if it has one.
 * hector_tensor_cache_destroy stops the thread after the chunk it is making
 * (a chunk's pinning cannot be interrupted) and joins it. */
HECTOR_API int hector_tensor_cache_reserve_pool(hector_tensor_cache* cache, uint64_t bytes,
                                                uint64_t chunk_bytes);

/* Waits until the pool is made (or its thread stopped). No pool: returns. */
HECTOR_API int hector_tensor_cache_pool_wait(hector_tensor_cache* cache);

HECTOR_API int hector_tensor_cache_pool_stats_get(hector_tensor_cache* cache,
                                                  hector_tensor_cache_pool_stats* stats);

/* --- For tests ------------------------------------------------------------ */

/* Each chunk of a pool reserved after this call takes at least `us`
 * microseconds more to make (slow pinning, on machines without a GPU). */
HECTOR_API int hector_tensor_cache_test_pin_delay(hector_tensor_cache* cache, uint64_t us);

/* The next read of `key` from the disk tier's file fails as an I/O error
 * (EIO) once. Fails with INVALID_ARGUMENT (unknown key). */
HECTOR_API int hector_tensor_cache_test_fail_read(hector_tensor_cache* cache, uint64_t key);

#ifdef __cplusplus
}
#endif

#endif
