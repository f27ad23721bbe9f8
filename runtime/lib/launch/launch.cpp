// The mgpu* functions that MLIR's GPU-to-LLVM lowering calls from the host
// code of `hectorc --target=cuda` libraries, and the caller's controls of
// include/hector/launch.h (error model, device, stream).
//
// Signatures follow what MLIR 22 emits (see the declarations in the LLVM IR
// of `hectorc --target=cuda --emit=llvmir`). Upstream's own wrappers abort on
// any CUDA error and are not shipped by Debian; these record the first error
// per thread instead, and turn every later call on that thread into a no-op.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <unordered_map>

#include "device.h"
#include "driver.h"
#include "error.h"
#include "hector/launch.h"
#include "hector/runtime.h"
#include "launch_status.h"

namespace hector {
namespace {

#define HECTOR_LAUNCH_STR2(x) #x
#define HECTOR_LAUNCH_STR(x) HECTOR_LAUNCH_STR2(x)

// Driver entry points the launch path needs beyond driver.h's table. They
// are looked up in the libcuda.so.1 that driver() already opened
// (RTLD_NOLOAD: the driver is never loaded twice). cuMemAllocAsync and
// cuMemFreeAsync may be missing on old drivers.
#define HECTOR_LAUNCH_CU_FUNCTIONS(X) \
  X(cuModuleUnload)                   \
  X(cuMemFree)                        \
  X(cuMemcpyAsync)                    \
  X(cuMemsetD32Async)                 \
  X(cuMemsetD16Async)                 \
  X(cuStreamCreate)                   \
  X(cuStreamDestroy)                  \
  X(cuStreamWaitEvent)                \
  X(cuEventCreate)                    \
  X(cuEventRecord)                    \
  X(cuEventSynchronize)               \
  X(cuEventQuery)                     \
  X(cuEventDestroy)
#define HECTOR_LAUNCH_CU_OPTIONAL(X) \
  X(cuMemAllocAsync)                 \
  X(cuMemFreeAsync)                  \
  X(cuMemPoolCreate)                 \
  X(cuMemPoolSetAttribute)           \
  X(cuMemPoolTrimTo)                 \
  X(cuMemAllocFromPoolAsync)

struct LaunchDriver {
#define HECTOR_LAUNCH_MEMBER(name) decltype(&::name) name = nullptr;
  HECTOR_LAUNCH_CU_FUNCTIONS(HECTOR_LAUNCH_MEMBER)
  HECTOR_LAUNCH_CU_OPTIONAL(HECTOR_LAUNCH_MEMBER)
#undef HECTOR_LAUNCH_MEMBER
};

// ---- Thread-local state: the first error, the device and the stream ----

struct ThreadState {
  int status = HECTOR_OK;
  char message[1024] = "";
  int device = 0;
  bool callerStream = false;
  CUstream stream = nullptr;
  int streamFlags = 0;
};
thread_local ThreadState t_state;

}  // namespace

// The functions of launch_status.h.

void record(int status, const char* fmt, ...) {
  if (t_state.status != HECTOR_OK) return;
  t_state.status = status;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_state.message, sizeof t_state.message, fmt, ap);
  va_end(ap);
}

bool check(const Driver* cu, CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  const char* text = nullptr;
  cu->cuGetErrorName(r, &name);
  cu->cuGetErrorString(r, &text);
  record(r == CUDA_ERROR_OUT_OF_MEMORY ? HECTOR_ERROR_OUT_OF_MEMORY : HECTOR_ERROR_CUDA,
         "%s: %s (%s)", what, name ? name : "unknown CUDA error", text ? text : "");
  return false;
}

int launch_device() { return t_state.device; }

bool launch_caller_stream(CUstream* out) {
  *out = t_state.stream;
  return t_state.callerStream;
}

namespace {

const LaunchDriver* launch_driver() {
  static std::once_flag once;
  static LaunchDriver table;
  static char missing[128] = "";
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) {
      std::snprintf(missing, sizeof missing, "libcuda.so.1 (not loaded)");
      return;
    }
#define HECTOR_LAUNCH_RESOLVE(name)                                          \
  table.name = reinterpret_cast<decltype(table.name)>(                       \
      dlsym(lib, HECTOR_LAUNCH_STR(name)));                                  \
  if (!table.name && !missing[0])                                            \
    std::snprintf(missing, sizeof missing, "%s", HECTOR_LAUNCH_STR(name));
    HECTOR_LAUNCH_CU_FUNCTIONS(HECTOR_LAUNCH_RESOLVE)
#undef HECTOR_LAUNCH_RESOLVE
#define HECTOR_LAUNCH_RESOLVE_OPTIONAL(name) \
  table.name = reinterpret_cast<decltype(table.name)>(dlsym(lib, HECTOR_LAUNCH_STR(name)));
    HECTOR_LAUNCH_CU_OPTIONAL(HECTOR_LAUNCH_RESOLVE_OPTIONAL)
#undef HECTOR_LAUNCH_RESOLVE_OPTIONAL
    // dlopen took one more reference to the library driver() holds; it is
    // never closed, like driver()'s.
  });
  if (missing[0]) {
    record(HECTOR_ERROR_NO_DRIVER, "CUDA driver too old: libcuda.so.1 lacks %s", missing);
    return nullptr;
  }
  return &table;
}

// The calling thread's device with its primary context, and the driver
// tables; null (error recorded) when there is none or a failure is pending.
struct Current {
  Device* device = nullptr;
  const LaunchDriver* ext = nullptr;
};

bool current(Current* out) {
  if (t_state.status != HECTOR_OK) return false;
  Device* d = nullptr;
  if (int s = get_device(t_state.device, &d)) {
    record(s, "%s", last_error());
    return false;
  }
  const LaunchDriver* ext = launch_driver();
  if (!ext) return false;
  out->device = d;
  out->ext = ext;
  return true;
}

// Releasing calls (free, destroy) run even after a failure, so that a failed
// entry call leaks nothing; this keeps the first error while they do.
class KeepFirstError {
 public:
  KeepFirstError() : saved_(t_state.status) {
    if (saved_ != HECTOR_OK) std::memcpy(message_, t_state.message, sizeof message_);
    t_state.status = HECTOR_OK;
  }
  ~KeepFirstError() {
    if (saved_ == HECTOR_OK) return;
    t_state.status = saved_;
    std::memcpy(t_state.message, message_, sizeof message_);
  }
  KeepFirstError(const KeepFirstError&) = delete;
  KeepFirstError& operator=(const KeepFirstError&) = delete;

 private:
  int saved_;
  char message_[sizeof t_state.message];
};

// Pushes the device's context for the scope of one mgpu* call.
class Scope {
 public:
  Scope() {
    if (!current(&cur_)) return;
    scope_.reset(new ContextScope(cur_.device));
    if (scope_->status() != HECTOR_OK) {
      record(scope_->status(), "%s", last_error());
      scope_.reset();
    }
  }
  explicit operator bool() const { return scope_ != nullptr; }
  const Driver* cu() const { return cur_.device->cu; }
  const LaunchDriver* ext() const { return cur_.ext; }
  Device* device() const { return cur_.device; }

 private:
  Current cur_;
  std::unique_ptr<ContextScope> scope_;
};

// ---- Temporary buffers: live and peak bytes ----------------------------------

// The sizes of live temporaries, so that frees can be accounted; a handful
// of buffers per entry call, so one lock is cheap. Bytes are reserved under
// the cap before the allocation and given back if it fails.
std::mutex g_temporaries_lock;
std::unordered_map<CUdeviceptr, uint64_t> g_temporaries;
uint64_t g_live_bytes = 0, g_peak_bytes = 0;
uint64_t g_cap_bytes = HECTOR_NO_TEMPORARY_CAP;
bool g_cap_malformed = false;  // $HECTOR_TEMPORARY_CAP did not parse
std::once_flag g_cap_once;

void read_cap_variable() {
  std::call_once(g_cap_once, [] {
    const char* text = std::getenv(HECTOR_TEMPORARY_CAP_ENV);
    uint64_t bytes = 0;
    if (!text || !*text) return;
    std::lock_guard<std::mutex> lock(g_temporaries_lock);
    if (hector_parse_byte_count(text, &bytes))
      g_cap_bytes = bytes;
    else
      g_cap_malformed = true;
  });
}

// Counts `size` more bytes live if the cap allows; else records why not.
bool reserve(uint64_t size) {
  read_cap_variable();
  std::lock_guard<std::mutex> lock(g_temporaries_lock);
  if (g_cap_malformed) {
    const char* text = std::getenv(HECTOR_TEMPORARY_CAP_ENV);
    record(HECTOR_ERROR_INVALID_ARGUMENT,
           "$%s = '%.64s' is not a number of bytes (optionally with a K, M, G or T "
           "suffix, e.g. 8G); no temporary is allocated until it is fixed or "
           "hector_launch_set_temporary_cap is called",
           HECTOR_TEMPORARY_CAP_ENV, text ? text : "");
    return false;
  }
  if (g_live_bytes > g_cap_bytes || size > g_cap_bytes - g_live_bytes) {
    record(HECTOR_ERROR_OUT_OF_MEMORY,
           "a temporary buffer of %llu bytes would exceed the cap on temporary device "
           "memory: %llu bytes, %llu of them in use (hector_launch_set_temporary_cap, "
           "$%s)",
           (unsigned long long)size, (unsigned long long)g_cap_bytes,
           (unsigned long long)g_live_bytes, HECTOR_TEMPORARY_CAP_ENV);
    return false;
  }
  g_live_bytes += size;
  if (g_live_bytes > g_peak_bytes) g_peak_bytes = g_live_bytes;
  return true;
}

void unreserve(uint64_t size) {
  std::lock_guard<std::mutex> lock(g_temporaries_lock);
  g_live_bytes -= size;
}

void track_alloc(CUdeviceptr p, uint64_t size) {
  std::lock_guard<std::mutex> lock(g_temporaries_lock);
  g_temporaries[p] = size;
}

void track_free(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(g_temporaries_lock);
  auto it = g_temporaries.find(p);
  if (it == g_temporaries.end()) return;
  g_live_bytes -= it->second;
  g_temporaries.erase(it);
}

// ---- Frees that wait for an offload copy ------------------------------------

// A temporary that an offload copy (hector_offload_evict, on its own stream)
// still reads is freed only once the copy's event has completed: until then
// its free is deferred, and later mgpu* calls free what has completed.
struct DeferredFree {
  CUdeviceptr p;
  int device;
  CUevent done;
};
std::mutex g_copies_lock;
std::unordered_map<CUdeviceptr, CUevent> g_copies;  // buffer -> its copy's event
std::vector<DeferredFree> g_deferred;

// ---- Kernel modules ------------------------------------------------------

std::atomic<int64_t> g_module_loads{0};

// One embedded GPU binary, loaded into a context on first use there. The
// generated library registers it from its constructor (at dlopen, when no
// device may be chosen yet) and unregisters it from its destructor.
struct LazyModule {
  const void* data = nullptr;
  bool ptx = false;  // NUL-terminated PTX text rather than a cubin/fatbin
  int refs = 0;
  std::mutex mutex;
  struct Loaded {
    CUmodule module = nullptr;
    CUcontext ctx = nullptr;
    const Driver* cu = nullptr;
    const LaunchDriver* ext = nullptr;
    std::unordered_map<std::string, CUfunction> functions;
  };
  std::unordered_map<int, Loaded> per_device;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::unique_ptr<LazyModule>> modules;
};

// Never destroyed: generated libraries unregister their modules from
// .fini_array functions, which run after this library's static destructors
// at exit.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

void* register_module(const void* data, bool ptx) {
  if (!data) {
    record(HECTOR_ERROR_INVALID_ARGUMENT, "mgpuModuleLoad: no GPU binary");
    return nullptr;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::unique_ptr<LazyModule>& slot = r.modules[data];
  if (!slot) {
    slot.reset(new LazyModule);
    slot->data = data;
    slot->ptx = ptx;
  }
  ++slot->refs;
  return slot.get();
}

// The module's function `name` in the current device's context (loading the
// module there on first use). Call inside a Scope.
CUfunction module_function(const Scope& scope, LazyModule* m, const char* name) {
  std::lock_guard<std::mutex> lock(m->mutex);
  LazyModule::Loaded& l = m->per_device[scope.device()->ordinal];
  if (!l.module) {
    CUresult r = scope.cu()->cuModuleLoadData(&l.module, m->data);
    if (!check(scope.cu(), r,
               m->ptx ? "loading the kernels' PTX (cuModuleLoadData)"
                      : "loading the kernels (cuModuleLoadData; was the library built for "
                        "this GPU's architecture? see hectorc --gpu-arch)")) {
      l.module = nullptr;
      return nullptr;
    }
    l.ctx = scope.device()->ctx;
    l.cu = scope.cu();
    l.ext = scope.ext();
    g_module_loads.fetch_add(1, std::memory_order_relaxed);
  }
  auto it = l.functions.find(name);
  if (it != l.functions.end()) return it->second;
  CUfunction f = nullptr;
  CUresult r = scope.cu()->cuModuleGetFunction(&f, l.module, name);
  if (r != CUDA_SUCCESS) {
    check(scope.cu(), r, "cuModuleGetFunction");
    std::snprintf(t_state.message + std::strlen(t_state.message),
                  sizeof t_state.message - std::strlen(t_state.message), " [kernel %s]", name);
    return nullptr;
  }
  l.functions.emplace(name, f);
  return f;
}

void unregister_module(LazyModule* m) {
  Registry& r = registry();
  std::unique_ptr<LazyModule> dead;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (--m->refs > 0) return;
    auto it = r.modules.find(m->data);
    if (it == r.modules.end()) return;
    dead = std::move(it->second);
    r.modules.erase(it);
  }
  // Errors are ignored: this runs while a library is unloaded, possibly at
  // exit after the driver shut down, where nobody could act on them.
  for (auto& entry : dead->per_device) {
    LazyModule::Loaded& l = entry.second;
    if (!l.module || l.cu->cuCtxPushCurrent(l.ctx) != CUDA_SUCCESS) continue;
    l.ext->cuModuleUnload(l.module);
    CUcontext popped = nullptr;
    l.cu->cuCtxPopCurrent(&popped);
  }
}

// ---- Device memory: stream ordered where the device supports it ----------
//
// Temporaries come from a memory pool of our own per device whose release
// threshold is unlimited: freed blocks stay mapped for the next call. With
// the default pool (threshold 0) the driver unmaps them at every
// synchronisation and maps them again on the next call, which cost more
// than the kernels of a small layer (docs/performance.md). The pool's
// memory is returned by hector_launch_trim_temporaries.

// An allocator of the caller's (hector_launch_set_allocator), or none.
struct ExternalAllocator {
  hector_alloc_fn alloc = nullptr;
  hector_free_fn free = nullptr;
  void* context = nullptr;
};
std::mutex g_allocator_mutex;
ExternalAllocator g_allocator;

ExternalAllocator external_allocator() {
  std::lock_guard<std::mutex> lock(g_allocator_mutex);
  return g_allocator;
}

constexpr int kMaxPoolDevices = 64;
// Per ordinal: the pool, or null where pools are not supported (then
// cuMemAlloc / cuMemFree); `known` says whether that was decided.
std::atomic<CUmemoryPool> g_pools[kMaxPoolDevices];
std::atomic<int8_t> g_pool_known[kMaxPoolDevices];
std::mutex g_pool_mutex;

bool has_pool_api(const Scope& scope) {
  const LaunchDriver* x = scope.ext();
  return x->cuMemAllocAsync && x->cuMemFreeAsync && x->cuMemPoolCreate &&
         x->cuMemPoolSetAttribute && x->cuMemPoolTrimTo && x->cuMemAllocFromPoolAsync;
}

CUmemoryPool create_pool(const Scope& scope) {
  int supported = 0;
  CUresult r = scope.cu()->cuDeviceGetAttribute(
      &supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, scope.device()->dev);
  if (r != CUDA_SUCCESS || !supported) return nullptr;
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = scope.device()->ordinal;
  CUmemoryPool pool = nullptr;
  if (scope.ext()->cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) return nullptr;
  cuuint64_t keep_everything = ~cuuint64_t(0);
  scope.ext()->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                     &keep_everything);
  return pool;
}

// The device's temporaries pool, or null to use cuMemAlloc / cuMemFree.
CUmemoryPool memory_pool(const Scope& scope) {
  int ordinal = scope.device()->ordinal;
  if (!has_pool_api(scope) || ordinal < 0 || ordinal >= kMaxPoolDevices) return nullptr;
  if (g_pool_known[ordinal].load(std::memory_order_acquire))
    return g_pools[ordinal].load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (!g_pool_known[ordinal].load(std::memory_order_relaxed)) {
    g_pools[ordinal].store(create_pool(scope), std::memory_order_relaxed);
    g_pool_known[ordinal].store(1, std::memory_order_release);
  }
  return g_pools[ordinal].load(std::memory_order_relaxed);
}

}  // namespace
}  // namespace hector

using hector::Scope;
using hector::t_state;

namespace hector {
namespace {

void free_now(const Scope& scope, CUdeviceptr p, void* stream) {
  track_free(p);
  if (ExternalAllocator external = external_allocator(); external.free) {
    external.free(reinterpret_cast<void*>(p), scope.device()->ordinal, stream,
                  external.context);
    return;
  }
  if (memory_pool(scope))
    check(scope.cu(), scope.ext()->cuMemFreeAsync(p, static_cast<CUstream>(stream)),
          "cuMemFreeAsync");
  else
    check(scope.cu(), scope.ext()->cuMemFree(p), "cuMemFree");
}

// Frees the deferred buffers of this device whose copies have completed
// (all of them with `wait`).
void free_deferred(const Scope& scope, bool wait) {
  std::vector<DeferredFree> ready;
  {
    std::lock_guard<std::mutex> lock(g_copies_lock);
    for (size_t i = 0; i < g_deferred.size();) {
      DeferredFree& d = g_deferred[i];
      if (d.device == scope.device()->ordinal &&
          (wait ? scope.ext()->cuEventSynchronize(d.done) == CUDA_SUCCESS
                : scope.ext()->cuEventQuery(d.done) == CUDA_SUCCESS)) {
        ready.push_back(d);
        d = g_deferred.back();
        g_deferred.pop_back();
      } else {
        ++i;
      }
    }
  }
  for (const DeferredFree& d : ready) {
    scope.ext()->cuEventDestroy(d.done);
    free_now(scope, d.p, nullptr);  // the copy is done: any stream will do
  }
}

}  // namespace

void free_after_copy(CUdeviceptr p, CUevent done) {
  std::lock_guard<std::mutex> lock(g_copies_lock);
  auto [it, inserted] = g_copies.emplace(p, done);
  if (!inserted) {  // evicted twice before its free: the later copy ends later
    if (const LaunchDriver* ext = launch_driver()) ext->cuEventDestroy(it->second);
    it->second = done;
  }
}

}  // namespace hector

extern "C" {

// ---- The caller's side (launch.h) ----------------------------------------

HECTOR_API int hector_launch_status(void) { return t_state.status; }

HECTOR_API const char* hector_launch_error(void) { return t_state.message; }

HECTOR_API void hector_launch_clear(void) {
  t_state.status = HECTOR_OK;
  t_state.message[0] = '\0';
}

HECTOR_API int hector_set_device(int device) {
  hector::clear_error();
  hector::Device* d = nullptr;
  if (int s = hector::get_device(device, &d)) return s;
  t_state.device = device;
  return HECTOR_OK;
}

HECTOR_API int hector_set_stream(void* stream, int flags) {
  hector::clear_error();
  if (flags & ~HECTOR_STREAM_ASYNC)
    return hector::fail(HECTOR_ERROR_INVALID_ARGUMENT,
                        "hector_set_stream: unknown flags 0x%x", flags);
  t_state.callerStream = true;
  t_state.stream = static_cast<CUstream>(stream);
  t_state.streamFlags = flags;
  return HECTOR_OK;
}

HECTOR_API void hector_reset_stream(void) {
  t_state.callerStream = false;
  t_state.stream = nullptr;
  t_state.streamFlags = 0;
}

HECTOR_API uint64_t hector_launch_peak_temporary_bytes(void) {
  std::lock_guard<std::mutex> lock(hector::g_temporaries_lock);
  return hector::g_peak_bytes;
}

HECTOR_API void hector_launch_reset_peak_temporary_bytes(void) {
  std::lock_guard<std::mutex> lock(hector::g_temporaries_lock);
  hector::g_peak_bytes = hector::g_live_bytes;
}

HECTOR_API int hector_launch_set_temporary_cap(uint64_t bytes) {
  hector::clear_error();
  hector::read_cap_variable();
  std::lock_guard<std::mutex> lock(hector::g_temporaries_lock);
  hector::g_cap_bytes = bytes;
  hector::g_cap_malformed = false;
  return HECTOR_OK;
}

HECTOR_API uint64_t hector_launch_temporary_cap(void) {
  hector::read_cap_variable();
  std::lock_guard<std::mutex> lock(hector::g_temporaries_lock);
  return hector::g_cap_malformed ? 0 : hector::g_cap_bytes;
}

HECTOR_API uint64_t hector_launch_temporary_bytes(void) {
  std::lock_guard<std::mutex> lock(hector::g_temporaries_lock);
  return hector::g_live_bytes;
}

HECTOR_API int hector_launch_set_allocator(hector_alloc_fn alloc, hector_free_fn free,
                                           void* context) {
  hector::clear_error();
  if (!alloc != !free) {
    hector::record(HECTOR_ERROR_INVALID_ARGUMENT,
                   "hector_launch_set_allocator: give both functions or neither");
    return t_state.status;
  }
  {
    std::lock_guard<std::mutex> lock(hector::g_temporaries_lock);
    if (hector::g_live_bytes > 0) {
      hector::record(HECTOR_ERROR_INVALID_ARGUMENT,
                     "hector_launch_set_allocator: %llu bytes of temporaries are live",
                     (unsigned long long)hector::g_live_bytes);
      return t_state.status;
    }
  }
  std::lock_guard<std::mutex> lock(hector::g_allocator_mutex);
  hector::g_allocator = {alloc, free, context};
  return HECTOR_OK;
}

HECTOR_API int hector_launch_trim_temporaries(void) {
  hector::clear_error();
  Scope scope;
  if (!scope) return t_state.status;
  for (int ordinal = 0; ordinal < hector::kMaxPoolDevices; ++ordinal) {
    if (!hector::g_pool_known[ordinal].load(std::memory_order_acquire)) continue;
    CUmemoryPool pool = hector::g_pools[ordinal].load(std::memory_order_relaxed);
    if (pool && !hector::check(scope.cu(), scope.ext()->cuMemPoolTrimTo(pool, 0),
                               "cuMemPoolTrimTo"))
      return t_state.status;
  }
  return HECTOR_OK;
}

HECTOR_API int64_t hector_launch_module_loads(void) {
  return hector::g_module_loads.load(std::memory_order_relaxed);
}

// ---- What generated code calls -------------------------------------------

HECTOR_API void* mgpuModuleLoad(void* data, size_t /*size*/) {
  return hector::register_module(data, /*ptx=*/false);
}

HECTOR_API void* mgpuModuleLoadJIT(void* data, int /*optLevel*/) {
  return hector::register_module(data, /*ptx=*/true);
}

HECTOR_API void mgpuModuleUnload(void* module) {
  if (module) hector::unregister_module(static_cast<hector::LazyModule*>(module));
}

HECTOR_API void* mgpuModuleGetFunction(void* module, const char* name) {
  Scope scope;
  if (!scope) return nullptr;
  if (!module) {
    hector::record(HECTOR_ERROR_INVALID_ARGUMENT,
                   "kernel %s: its module was never registered", name ? name : "?");
    return nullptr;
  }
  return hector::module_function(scope, static_cast<hector::LazyModule*>(module), name);
}

HECTOR_API void mgpuLaunchKernel(void* function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                                 intptr_t blockZ, int32_t smem, void* stream, void** params,
                                 void** extra, size_t /*paramsCount*/) {
  Scope scope;
  if (!scope || !function) return;
  // An empty iteration space launches nothing (CUDA rejects a 0 grid).
  if (gridX == 0 || gridY == 0 || gridZ == 0) return;
  const intptr_t dims[6] = {gridX, gridY, gridZ, blockX, blockY, blockZ};
  for (intptr_t d : dims)
    if (d < 0 || d > INT32_MAX) {
      hector::record(HECTOR_ERROR_INVALID_ARGUMENT,
                     "kernel launch with grid (%ld, %ld, %ld) x block (%ld, %ld, %ld): "
                     "dimension out of range",
                     (long)gridX, (long)gridY, (long)gridZ, (long)blockX, (long)blockY,
                     (long)blockZ);
      return;
    }
  CUfunction f = static_cast<CUfunction>(function);
  if (smem > 48 * 1024 &&
      !hector::check(scope.cu(),
                     scope.cu()->cuFuncSetAttribute(
                         f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                     "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))
    return;
  CUresult r = scope.cu()->cuLaunchKernel(
      f, unsigned(gridX), unsigned(gridY), unsigned(gridZ), unsigned(blockX), unsigned(blockY),
      unsigned(blockZ), unsigned(smem), static_cast<CUstream>(stream), params, extra);
  if (r != CUDA_SUCCESS) {
    hector::check(scope.cu(), r, "cuLaunchKernel");
    std::snprintf(t_state.message + std::strlen(t_state.message),
                  sizeof t_state.message - std::strlen(t_state.message),
                  " [grid (%ld, %ld, %ld) x block (%ld, %ld, %ld)]", (long)gridX, (long)gridY,
                  (long)gridZ, (long)blockX, (long)blockY, (long)blockZ);
  }
}

HECTOR_API void* mgpuStreamCreate(void) {
  Scope scope;
  if (!scope) return nullptr;
  if (t_state.callerStream) return t_state.stream;
  CUstream s = nullptr;
  if (!hector::check(scope.cu(), scope.ext()->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
                     "cuStreamCreate"))
    return nullptr;
  return s;
}

HECTOR_API void mgpuStreamDestroy(void* stream) {
  // The caller's stream is never destroyed; ours are, even after a failure.
  if ((t_state.callerStream && stream == t_state.stream) || !stream) return;
  hector::KeepFirstError keep;
  Scope scope;
  if (!scope) return;
  hector::check(scope.cu(), scope.ext()->cuStreamDestroy(static_cast<CUstream>(stream)),
                "cuStreamDestroy");
}

HECTOR_API void mgpuStreamSynchronize(void* stream) {
  if (t_state.callerStream && stream == t_state.stream &&
      (t_state.streamFlags & HECTOR_STREAM_ASYNC))
    return;
  Scope scope;
  if (!scope) return;
  hector::free_deferred(scope, /*wait=*/false);
  hector::check(scope.cu(), scope.cu()->cuStreamSynchronize(static_cast<CUstream>(stream)),
                "a kernel of this entry point failed (cuStreamSynchronize)");
}

HECTOR_API void mgpuStreamWaitEvent(void* stream, void* event) {
  Scope scope;
  if (!scope || !event) return;
  hector::check(scope.cu(),
                scope.ext()->cuStreamWaitEvent(static_cast<CUstream>(stream),
                                               static_cast<CUevent>(event), 0),
                "cuStreamWaitEvent");
}

HECTOR_API void* mgpuEventCreate(void) {
  Scope scope;
  if (!scope) return nullptr;
  CUevent e = nullptr;
  if (!hector::check(scope.cu(), scope.ext()->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate"))
    return nullptr;
  return e;
}

HECTOR_API void mgpuEventDestroy(void* event) {
  if (!event) return;
  hector::KeepFirstError keep;
  Scope scope;
  if (!scope || !event) return;
  hector::check(scope.cu(), scope.ext()->cuEventDestroy(static_cast<CUevent>(event)),
                "cuEventDestroy");
}

HECTOR_API void mgpuEventSynchronize(void* event) {
  Scope scope;
  if (!scope || !event) return;
  hector::check(scope.cu(), scope.ext()->cuEventSynchronize(static_cast<CUevent>(event)),
                "a kernel of this entry point failed (cuEventSynchronize)");
}

HECTOR_API void mgpuEventRecord(void* event, void* stream) {
  Scope scope;
  if (!scope || !event) return;
  hector::check(scope.cu(),
                scope.ext()->cuEventRecord(static_cast<CUevent>(event),
                                           static_cast<CUstream>(stream)),
                "cuEventRecord");
}

HECTOR_API void* mgpuMemAlloc(uint64_t size, void* stream, bool isHostShared) {
  Scope scope;
  if (!scope) return nullptr;
  hector::free_deferred(scope, /*wait=*/false);
  if (isHostShared) {
    hector::record(HECTOR_ERROR_INVALID_ARGUMENT,
                   "gpu.alloc host_shared (managed memory) is not supported");
    return nullptr;
  }
  if (size == 0) return nullptr;
  if (!hector::reserve(size)) return nullptr;
  CUdeviceptr p = 0;
  if (hector::ExternalAllocator external = hector::external_allocator(); external.alloc) {
    void* q = external.alloc(size, scope.device()->ordinal, stream, external.context);
    if (!q) {
      hector::unreserve(size);
      hector::record(HECTOR_ERROR_OUT_OF_MEMORY,
                     "allocating a temporary buffer: the caller's allocator has no "
                     "memory [%llu bytes]",
                     (unsigned long long)size);
      return nullptr;
    }
    hector::track_alloc(reinterpret_cast<CUdeviceptr>(q), size);
    return q;
  }
  CUmemoryPool pool = hector::memory_pool(scope);
  CUresult r = pool ? scope.ext()->cuMemAllocFromPoolAsync(&p, size, pool,
                                                           static_cast<CUstream>(stream))
                    : scope.cu()->cuMemAlloc(&p, size);
  if (r != CUDA_SUCCESS) {
    hector::unreserve(size);
    hector::check(scope.cu(), r, "allocating a temporary buffer");
    std::snprintf(t_state.message + std::strlen(t_state.message),
                  sizeof t_state.message - std::strlen(t_state.message), " [%llu bytes]",
                  (unsigned long long)size);
    return nullptr;
  }
  hector::track_alloc(p, size);
  return reinterpret_cast<void*>(p);
}

HECTOR_API void mgpuMemFree(void* ptr, void* stream) {
  // Freed even after a failure: the buffer would leak otherwise.
  if (!ptr) return;
  hector::KeepFirstError keep;
  Scope scope;
  if (!scope) return;
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  {
    std::lock_guard<std::mutex> lock(hector::g_copies_lock);
    if (auto it = hector::g_copies.find(p); it != hector::g_copies.end()) {
      CUevent done = it->second;
      hector::g_copies.erase(it);
      if (scope.ext()->cuEventQuery(done) == CUDA_ERROR_NOT_READY) {
        hector::g_deferred.push_back({p, scope.device()->ordinal, done});
        return;
      }
      scope.ext()->cuEventDestroy(done);
    }
  }
  hector::free_now(scope, p, stream);
  hector::free_deferred(scope, /*wait=*/false);
}

HECTOR_API void mgpuMemcpy(void* dst, void* src, size_t size, void* stream) {
  Scope scope;
  if (!scope || size == 0) return;
  hector::check(scope.cu(),
                scope.ext()->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                           reinterpret_cast<CUdeviceptr>(src), size,
                                           static_cast<CUstream>(stream)),
                "cuMemcpyAsync");
}

HECTOR_API void mgpuMemset32(void* dst, unsigned int value, size_t count, void* stream) {
  Scope scope;
  if (!scope || count == 0) return;
  hector::check(scope.cu(),
                scope.ext()->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                                              static_cast<CUstream>(stream)),
                "cuMemsetD32Async");
}

HECTOR_API void mgpuMemset16(void* dst, unsigned short value, size_t count, void* stream) {
  Scope scope;
  if (!scope || count == 0) return;
  hector::check(scope.cu(),
                scope.ext()->cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                                              static_cast<CUstream>(stream)),
                "cuMemsetD16Async");
}

HECTOR_API void mgpuSetDefaultDevice(int32_t device) {
  if (hector_set_device(device) != HECTOR_OK)
    hector::record(HECTOR_ERROR_NO_DEVICE, "mgpuSetDefaultDevice: %s", hector::last_error());
}

}  // extern "C"
