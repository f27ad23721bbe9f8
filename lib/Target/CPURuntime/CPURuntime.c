/*===- CPURuntime.c - what a CPU library carries with it ------------------===//
 *
 * Compiled to LLVM bitcode when hectorc is built, embedded in hectorc, and
 * linked into every CPU library (only the functions it uses), with hidden
 * visibility: each library has its own copy and exports only the functions
 * of runtime/include/hector/temporaries.h. It needs nothing but libc
 * (pthreads are in libc since glibc 2.34; the link also passes -pthread for
 * older ones) and the dynamic loader (__tls_get_addr, for the thread-local
 * status). Nothing here may abort or print.
 *
 *  - hector_cpu_parallel_for: a small thread pool that runs the outlined
 *    parallel loops (hector-cpu-parallel). The calling thread takes part;
 *    workers are started on first use and sleep between loops. Threads:
 *    HECTOR_NUM_THREADS, else OMP_NUM_THREADS (its first entry), else the
 *    CPUs this process may run on; read at every loop, so a change takes
 *    effect at the next call. A loop started while the pool is busy (another
 *    thread calling the library at the same time) runs on its caller alone.
 *  - hector_cpu_level: which x86-64 level the CPU and the OS support, for
 *    the entry points compiled once per level (Backend.cpp).
 *  - _mlir_memref_to_llvm_alloc/_free (what memref.alloc/dealloc call with
 *    finalize-memref-to-llvm{use-generic-functions}): malloc, except that
 *    freed blocks of 1 MiB or more are kept (up to 16) and handed out again
 *    for requests of their size (up to 1/8 less). A model's temporaries are
 *    edge-sized and the same at every call; fresh ones would be page-faulted
 *    and zeroed by the kernel at every call. HECTOR_CPU_CACHE=0 turns the
 *    cache off. The bytes the library's temporaries hold are counted, and
 *    capped (hector_cpu_set_temporary_cap, $HECTOR_TEMPORARY_CAP): an
 *    allocation past the cap, or one malloc refuses, returns NULL and
 *    records HECTOR_ERROR_OUT_OF_MEMORY in the calling thread's status;
 *    the generated code checks every allocation (hector-cpu-check-
 *    allocations), frees what it holds and returns. The counters, the cap
 *    and the status are the part of this runtime a library exports
 *    (runtime/include/hector/temporaries.h).
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <stdarg.h>
#include <stdio.h>

#include "hector/temporaries.h"

#define HIDDEN __attribute__((visibility("hidden")))

typedef void (*hector_body_fn)(int64_t begin, int64_t end, void *context);

enum { kMaxThreads = 1024, kChunksPerThread = 8 };

/* ---- the calling thread's status --------------------------------------- */

/* The first failure of an entry point on a thread since the last clear. A
 * worker of the pool records into the status of the thread whose loop it
 * runs (t_current), so the caller sees failures of its loops' bodies. */
struct call_status {
  int code;
  char message[512];
};
static __thread struct call_status t_status;
static __thread struct call_status *t_current;

static struct call_status *current_status(void) {
  return t_current ? t_current : &t_status;
}

static int failure_pending(void) {
  return __atomic_load_n(&current_status()->code, __ATOMIC_ACQUIRE) != HECTOR_OK;
}

__attribute__((format(printf, 2, 3))) static void record(int code,
                                                        const char *fmt, ...) {
  struct call_status *s = current_status();
  int none = HECTOR_OK;
  /* The first failure wins; its message is read once the loop is over. */
  if (!__atomic_compare_exchange_n(&s->code, &none, code, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->message, sizeof s->message, fmt, ap);
  va_end(ap);
}

int hector_cpu_status(void) {
  return __atomic_load_n(&current_status()->code, __ATOMIC_ACQUIRE);
}

const char *hector_cpu_error(void) { return current_status()->message; }

void hector_cpu_clear(void) {
  struct call_status *s = current_status();
  s->message[0] = '\0';
  __atomic_store_n(&s->code, HECTOR_OK, __ATOMIC_RELEASE);
}

/* ---- thread count ------------------------------------------------------ */

/* A positive count from an environment variable (OMP's list form "4,2"
 * counts its first entry), or 0. */
static int env_threads(const char *name) {
  const char *text = getenv(name);
  if (!text)
    return 0;
  long value = 0;
  const char *p = text;
  while (*p == ' ')
    ++p;
  if (*p < '0' || *p > '9')
    return 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    value = value * 10 + (*p - '0');
    if (value > kMaxThreads)
      value = kMaxThreads;
  }
  while (*p == ' ')
    ++p;
  if (*p != '\0' && *p != ',')
    return 0;
  return (int)value;
}

static int cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)(n < kMaxThreads ? n : kMaxThreads) : 1;
}

HIDDEN int hector_cpu_num_threads(void) {
  int n = env_threads("HECTOR_NUM_THREADS");
  if (n <= 0)
    n = env_threads("OMP_NUM_THREADS");
  if (n <= 0)
    n = cpu_count();
  return n;
}

/* ---- the pool ---------------------------------------------------------- */

struct pool {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  pid_t owner;        /* the process that started the workers */
  int workers;        /* started worker threads */
  pthread_t threads[kMaxThreads];
  unsigned long generation; /* one per loop */
  unsigned long born[kMaxThreads]; /* generation when each worker started */
  int stop;
  /* the current loop */
  hector_body_fn fn;
  void *context;
  int64_t total, chunk;
  int active;  /* workers 1..active take part */
  int pending; /* of those, still running */
  int64_t next; /* first iteration nobody has taken (atomic) */
  struct call_status *status; /* the submitter's */
};

static struct pool pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
                           .wake = PTHREAD_COND_INITIALIZER,
                           .done = PTHREAD_COND_INITIALIZER};
/* Held by the thread whose loop the pool runs. */
static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER;

static void run_chunks(void) {
  for (;;) {
    int64_t begin = __atomic_fetch_add(&pool.next, pool.chunk, __ATOMIC_RELAXED);
    if (begin >= pool.total)
      return;
    int64_t end = pool.total - begin < pool.chunk ? pool.total
                                                  : begin + pool.chunk;
    pool.fn(begin, end, pool.context);
  }
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool.lock);
  /* Not the generation now: the loop the worker was started for may have
   * begun already. */
  seen = pool.born[id - 1];
  for (;;) {
    while (!pool.stop && pool.generation == seen)
      pthread_cond_wait(&pool.wake, &pool.lock);
    if (pool.stop)
      break;
    seen = pool.generation;
    if (id > pool.active)
      continue;
    t_current = pool.status;
    pthread_mutex_unlock(&pool.lock);
    run_chunks();
    pthread_mutex_lock(&pool.lock);
    t_current = NULL;
    if (--pool.pending == 0)
      pthread_cond_signal(&pool.done);
  }
  pthread_mutex_unlock(&pool.lock);
  return NULL;
}

/* Starts workers until there are `wanted`; returns how many there are. A
 * thread that cannot be started just means fewer of them. */
static int ensure_workers(int wanted) {
  if (pool.owner != getpid()) {
    /* First use, or a child after fork(): the parent's workers do not
     * exist here. */
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.stop = 0;
    pool.owner = getpid();
  }
  if (pool.workers >= wanted)
    return pool.workers;
  /* Workers take no signals: the application's threads handle them. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  while (pool.workers < wanted) {
    int id = pool.workers + 1;
    pool.born[id - 1] = pool.generation; /* only the submitter changes it */
    if (pthread_create(&pool.threads[pool.workers], NULL, worker,
                       (void *)(intptr_t)id) != 0)
      break;
    ++pool.workers;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return pool.workers;
}

HIDDEN void hector_cpu_parallel_for(hector_body_fn fn, void *context,
                                    int64_t total) {
  if (total <= 0)
    return;
  int threads = hector_cpu_num_threads();
  if (threads > total)
    threads = (int)total;
  if (threads <= 1 || pthread_mutex_trylock(&submit) != 0) {
    fn(0, total, context);
    return;
  }
  int helpers = ensure_workers(threads - 1);
  if (helpers > threads - 1)
    helpers = threads - 1;
  if (helpers == 0) {
    pthread_mutex_unlock(&submit);
    fn(0, total, context);
    return;
  }
  int64_t chunk = total / ((int64_t)(helpers + 1) * kChunksPerThread);
  pthread_mutex_lock(&pool.lock);
  pool.fn = fn;
  pool.context = context;
  pool.total = total;
  pool.chunk = chunk > 0 ? chunk : 1;
  pool.next = 0;
  pool.active = helpers;
  pool.pending = helpers;
  pool.status = current_status();
  ++pool.generation;
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);

  run_chunks();

  pthread_mutex_lock(&pool.lock);
  while (pool.pending > 0)
    pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&submit);
}

/* Workers run this library's code: stop them before it is unmapped
 * (dlclose) or the process exits. */
__attribute__((destructor)) static void stop_workers(void) {
  if (pool.workers == 0 || pool.owner != getpid())
    return;
  pthread_mutex_lock(&pool.lock);
  pool.stop = 1;
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);
  for (int k = 0; k < pool.workers; ++k)
    pthread_join(pool.threads[k], NULL);
  pool.workers = 0;
}

/* ---- CPU level --------------------------------------------------------- */

/* 0: baseline x86-64 (or not x86), 3: x86-64-v3 (AVX2, FMA, BMI1/2, F16C,
 * LZCNT, MOVBE), 4: x86-64-v4 (+ AVX-512 F/BW/CD/DQ/VL); the AVX states must
 * be enabled by the OS. HECTOR_CPU_LEVEL=0|3|4 lowers it (for tests), never
 * raises it. */
static int detect_level(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return 0;
  int v2 = (c & bit_SSE3) && (c & bit_SSSE3) && (c & bit_SSE4_1) &&
           (c & bit_SSE4_2) && (c & bit_POPCNT) && (c & bit_CMPXCHG16B);
  int v3 = v2 && (c & bit_AVX) && (c & bit_FMA) && (c & bit_F16C) &&
           (c & bit_MOVBE) && (c & bit_OSXSAVE);
  if (!v3)
    return 0;
  unsigned xcr0, xcr0High;
  __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0High) : "c"(0));
  (void)xcr0High;
  if ((xcr0 & 0x6) != 0x6) /* SSE and AVX state */
    return 0;
  unsigned ea, eb, ec, ed;
  if (!__get_cpuid(0x80000001, &ea, &eb, &ec, &ed) || !(ec & bit_LZCNT) ||
      !(ec & bit_LAHF_LM))
    return 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return 0;
  if (!(b & bit_AVX2) || !(b & bit_BMI) || !(b & bit_BMI2))
    return 0;
  int v4 = (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512CD) &&
           (b & bit_AVX512DQ) && (b & bit_AVX512VL) &&
           (xcr0 & 0xe6) == 0xe6; /* + opmask and ZMM state */
  return v4 ? 4 : 3;
#else
  return 0;
#endif
}

HIDDEN int hector_cpu_level(void) {
  static int level = -1;
  int known = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (known >= 0)
    return known;
  int detected = detect_level();
  const char *cap = getenv("HECTOR_CPU_LEVEL");
  if (cap && cap[0] >= '0' && cap[0] <= '9' && cap[1] == '\0' &&
      cap[0] - '0' < detected)
    detected = cap[0] - '0';
  __atomic_store_n(&level, detected, __ATOMIC_RELAXED);
  return detected;
}

/* ---- allocation -------------------------------------------------------- */

enum { kHeader = 64, kCacheSlots = 16 };
static const size_t kCacheMin = (size_t)1 << 20;

/* Every block starts with a header holding its capacity (bytes after the
 * header); the memory handed out is 64-byte aligned. */
struct block_cache {
  pthread_mutex_t lock;
  void *raw[kCacheSlots];
  size_t capacity[kCacheSlots];
  unsigned long stamp[kCacheSlots], clock;
  size_t held; /* the capacities of the cached blocks */
  int enabled; /* -1: not read yet */
};
static struct block_cache cache = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                   .enabled = -1};

/* Bytes the library's temporaries hold (each block counted at its
 * capacity), and the most they held at once since the last reset. */
static size_t live_bytes, peak_bytes;

/* The cap on live_bytes: $HECTOR_TEMPORARY_CAP until set. */
static uint64_t cap_bytes = HECTOR_NO_TEMPORARY_CAP;
static int cap_malformed; /* the variable did not parse: refuse everything */
static pthread_once_t cap_once = PTHREAD_ONCE_INIT;

static void read_cap_variable(void) {
  const char *text = getenv(HECTOR_TEMPORARY_CAP_ENV);
  uint64_t bytes = 0;
  if (!text || !*text)
    return;
  if (hector_parse_byte_count(text, &bytes))
    __atomic_store_n(&cap_bytes, bytes, __ATOMIC_RELAXED);
  else
    __atomic_store_n(&cap_malformed, 1, __ATOMIC_RELAXED);
}

static uint64_t current_cap(void) {
  pthread_once(&cap_once, read_cap_variable);
  return __atomic_load_n(&cap_bytes, __ATOMIC_RELAXED);
}

int hector_cpu_set_temporary_cap(uint64_t bytes) {
  pthread_once(&cap_once, read_cap_variable);
  __atomic_store_n(&cap_bytes, bytes, __ATOMIC_RELAXED);
  __atomic_store_n(&cap_malformed, 0, __ATOMIC_RELAXED);
  return HECTOR_OK;
}

uint64_t hector_cpu_temporary_cap(void) {
  uint64_t cap = current_cap();
  return __atomic_load_n(&cap_malformed, __ATOMIC_RELAXED) ? 0 : cap;
}

uint64_t hector_cpu_temporary_bytes(void) {
  return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

/* Counts `capacity` more bytes in use if that stays within the cap. */
static int reserve(size_t capacity) {
  uint64_t cap = current_cap();
  size_t now = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
  do {
    if (now > cap || capacity > cap - now)
      return 0;
  } while (!__atomic_compare_exchange_n(&live_bytes, &now, now + capacity, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  size_t peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
  while (now + capacity > peak &&
         !__atomic_compare_exchange_n(&peak_bytes, &peak, now + capacity, 1,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return 1;
}

uint64_t hector_cpu_peak_temporary_bytes(void) {
  return __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
}

/* The peak starts again from what is held now. */
void hector_cpu_reset_peak_temporary_bytes(void) {
  __atomic_store_n(&peak_bytes, __atomic_load_n(&live_bytes, __ATOMIC_RELAXED),
                   __ATOMIC_RELAXED);
}

static int cache_enabled(void) {
  if (cache.enabled < 0) {
    const char *text = getenv("HECTOR_CPU_CACHE");
    cache.enabled = !(text && strcmp(text, "0") == 0);
  }
  return cache.enabled;
}

/* Frees cached blocks, least recently cached first, until the cache holds
 * at most `keep` bytes. Call with cache.lock held. */
static void shrink_cache(size_t keep) {
  while (cache.held > keep) {
    int oldest = -1;
    for (int k = 0; k < kCacheSlots; ++k)
      if (cache.raw[k] && (oldest < 0 || cache.stamp[k] < cache.stamp[oldest]))
        oldest = k;
    if (oldest < 0)
      return;
    free(cache.raw[oldest]);
    cache.raw[oldest] = NULL;
    cache.held -= cache.capacity[oldest];
  }
}

/* Bytes the cache may keep beside the temporaries in use: the library holds
 * no more than the cap in both together. */
static size_t cache_room(void) {
  uint64_t cap = current_cap();
  size_t live = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
  return live >= cap ? 0 : (size_t)(cap - live < SIZE_MAX ? cap - live : SIZE_MAX);
}

static void *refuse(size_t size) {
  uint64_t cap = current_cap();
  size_t live = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
  record(HECTOR_ERROR_OUT_OF_MEMORY,
         "a temporary buffer of %zu bytes would exceed the cap on this "
         "library's temporaries: %llu bytes, %zu of them in use "
         "(hector_cpu_set_temporary_cap, $" HECTOR_TEMPORARY_CAP_ENV ")",
         size, (unsigned long long)cap, live);
  return NULL;
}

HIDDEN void *_mlir_memref_to_llvm_alloc(size_t size) {
  /* After a failure the entry point stops: nothing more is allocated. */
  if (failure_pending())
    return NULL;
  (void)current_cap(); /* reads $HECTOR_TEMPORARY_CAP once */
  if (__atomic_load_n(&cap_malformed, __ATOMIC_RELAXED)) {
    const char *text = getenv(HECTOR_TEMPORARY_CAP_ENV);
    record(HECTOR_ERROR_INVALID_ARGUMENT,
           "$" HECTOR_TEMPORARY_CAP_ENV " = '%.64s' is not a number of bytes "
           "(optionally with a K, M, G or T suffix, e.g. 8G); no temporary "
           "is allocated until it is fixed or hector_cpu_set_temporary_cap "
           "is called",
           text ? text : "");
    return NULL;
  }
  if (size >= kCacheMin) {
    pthread_mutex_lock(&cache.lock);
    int best = -1;
    if (cache_enabled())
      for (int k = 0; k < kCacheSlots; ++k)
        if (cache.raw[k] && cache.capacity[k] >= size &&
            cache.capacity[k] - size <= size / 8 &&
            (best < 0 || cache.capacity[k] < cache.capacity[best]))
          best = k;
    void *raw = NULL;
    /* A cached block counts at its capacity: taken only if that fits. */
    if (best >= 0 && reserve(cache.capacity[best])) {
      raw = cache.raw[best];
      cache.raw[best] = NULL;
      cache.held -= cache.capacity[best];
    }
    pthread_mutex_unlock(&cache.lock);
    if (raw)
      return (char *)raw + kHeader;
  }
  if (size > SIZE_MAX - kHeader)
    return refuse(size);
  if (!reserve(size))
    return refuse(size);
  if (current_cap() != HECTOR_NO_TEMPORARY_CAP) {
    /* Under a cap, kept blocks make room for new ones. */
    pthread_mutex_lock(&cache.lock);
    shrink_cache(cache_room());
    pthread_mutex_unlock(&cache.lock);
  }
  void *raw = NULL;
  if (posix_memalign(&raw, kHeader, size + kHeader) != 0) {
    __atomic_sub_fetch(&live_bytes, size, __ATOMIC_RELAXED);
    record(HECTOR_ERROR_OUT_OF_MEMORY,
           "a temporary buffer of %zu bytes: out of host memory (malloc "
           "failed; cap %llu bytes, %zu in use)",
           size, (unsigned long long)current_cap(),
           (size_t)__atomic_load_n(&live_bytes, __ATOMIC_RELAXED));
    return NULL;
  }
  *(size_t *)raw = size;
  return (char *)raw + kHeader;
}

HIDDEN void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                size_t size) {
  /* Blocks are 64-byte aligned; larger alignments are not produced by the
   * lowering unless asked for (use-aligned-alloc is off). */
  if (alignment > kHeader) {
    record(HECTOR_ERROR_INVALID_ARGUMENT,
           "a temporary buffer aligned to %zu bytes (at most %d supported)",
           alignment, (int)kHeader);
    return NULL;
  }
  return _mlir_memref_to_llvm_alloc(size);
}

HIDDEN void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  void *raw = (char *)ptr - kHeader;
  size_t capacity = *(size_t *)raw;
  __atomic_sub_fetch(&live_bytes, capacity, __ATOMIC_RELAXED);
  if (capacity >= kCacheMin) {
    pthread_mutex_lock(&cache.lock);
    if (cache_enabled()) {
      /* An empty slot, else the least recently cached block makes room. */
      int slot = 0;
      for (int k = 0; k < kCacheSlots; ++k) {
        if (!cache.raw[k]) {
          slot = k;
          break;
        }
        if (cache.stamp[k] < cache.stamp[slot])
          slot = k;
      }
      void *evicted = cache.raw[slot];
      if (evicted)
        cache.held -= cache.capacity[slot];
      cache.raw[slot] = raw;
      cache.capacity[slot] = capacity;
      cache.stamp[slot] = ++cache.clock;
      cache.held += capacity;
      raw = evicted;
      /* Under a cap, the cache keeps what fits beside the bytes in use. */
      if (current_cap() != HECTOR_NO_TEMPORARY_CAP)
        shrink_cache(cache_room());
    }
    pthread_mutex_unlock(&cache.lock);
  }
  free(raw);
}

__attribute__((destructor)) static void release_cache(void) {
  for (int k = 0; k < kCacheSlots; ++k) {
    free(cache.raw[k]);
    cache.raw[k] = NULL;
  }
  cache.held = 0;
}
