// The GPU side of offload (device_copy.h), on the CUDA driver API in the
// device's primary context, like the rest of the runtime.
#include "device_copy.h"

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <optional>
#include <unordered_map>

#include "device.h"
#include "driver.h"
#include "error.h"
#include "hector/runtime.h"
#include "launch/launch_status.h"

namespace hector {
namespace offload {
namespace {

#define HECTOR_OFFLOAD_STR2(x) #x
#define HECTOR_OFFLOAD_STR(x) HECTOR_OFFLOAD_STR2(x)

// Driver entry points beyond driver.h's table, looked up in the
// libcuda.so.1 that driver() opened (only ever called after it did).
struct Extra {
  decltype(&::cuMemcpyAsync) cuMemcpyAsync = nullptr;
  decltype(&::cuMemFree) cuMemFree = nullptr;
  decltype(&::cuStreamCreate) cuStreamCreate = nullptr;
  decltype(&::cuStreamWaitEvent) cuStreamWaitEvent = nullptr;
  decltype(&::cuEventCreate) cuEventCreate = nullptr;
  decltype(&::cuEventRecord) cuEventRecord = nullptr;
  decltype(&::cuEventSynchronize) cuEventSynchronize = nullptr;
  decltype(&::cuEventDestroy) cuEventDestroy = nullptr;
  decltype(&::cuLaunchHostFunc) cuLaunchHostFunc = nullptr;
};

const Extra* extra() {
  static std::once_flag once;
  static Extra table;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) return;
    // HECTOR_OFFLOAD_STR expands cuda.h's versioning macros (cuMemFree_v2).
    table.cuMemcpyAsync = reinterpret_cast<decltype(table.cuMemcpyAsync)>(
        dlsym(lib, HECTOR_OFFLOAD_STR(cuMemcpyAsync)));
    table.cuMemFree =
        reinterpret_cast<decltype(table.cuMemFree)>(dlsym(lib, HECTOR_OFFLOAD_STR(cuMemFree)));
#define HECTOR_OFFLOAD_RESOLVE(name) \
  table.name = reinterpret_cast<decltype(table.name)>(dlsym(lib, HECTOR_OFFLOAD_STR(name)));
    HECTOR_OFFLOAD_RESOLVE(cuStreamCreate)
    HECTOR_OFFLOAD_RESOLVE(cuStreamWaitEvent)
    HECTOR_OFFLOAD_RESOLVE(cuEventCreate)
    HECTOR_OFFLOAD_RESOLVE(cuEventRecord)
    HECTOR_OFFLOAD_RESOLVE(cuEventSynchronize)
    HECTOR_OFFLOAD_RESOLVE(cuEventDestroy)
    HECTOR_OFFLOAD_RESOLVE(cuLaunchHostFunc)
#undef HECTOR_OFFLOAD_RESOLVE
  });
  return table.cuMemcpyAsync && table.cuMemFree && table.cuStreamCreate &&
                 table.cuStreamWaitEvent && table.cuEventCreate && table.cuEventRecord &&
                 table.cuEventSynchronize && table.cuEventDestroy && table.cuLaunchHostFunc
             ? &table
             : nullptr;
}

// A device with its primary context current for the scope. A failure is
// in status(), with hector_last_error().
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal) {
    if ((status_ = get_device(ordinal, &d_)) != HECTOR_OK) return;
    if (!(x_ = extra())) {
      status_ = fail(HECTOR_ERROR_NO_DRIVER,
                     "CUDA driver too old: libcuda.so.1 lacks a copy, stream or event function");
      return;
    }
    scope_.emplace(d_);
    if ((status_ = scope_->status()) != HECTOR_OK) scope_.reset();
  }
  int status() const { return status_; }
  const Driver* cu() const { return d_->cu; }
  const Extra* x() const { return x_; }

 private:
  Device* d_ = nullptr;
  const Extra* x_ = nullptr;
  int status_ = HECTOR_OK;
  std::optional<ContextScope> scope_;
};

// The generated-code side: a scope on the thread's launch device, or false
// with the failure recorded in the launch status.
bool enter(std::optional<DeviceScope>& scope) {
  scope.emplace(launch_device());
  if (scope->status() == HECTOR_OK) return true;
  record(scope->status(), "offload: %s", last_error());
  return false;
}

bool driver_loaded() {
  static std::atomic<bool> loaded{false};
  if (loaded.load(std::memory_order_relaxed)) return true;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!lib) return false;
  dlclose(lib);  // drops only the reference this dlopen took
  loaded.store(true, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool is_device_memory(const void* p) {
  if (!p || !driver_loaded()) return false;
  const Driver* cu = nullptr;
  if (driver(&cu) != HECTOR_OK) return false;  // a driver that cannot start has no memory
  CUmemorytype type = CUmemorytype(0);
  CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(p);
  CUresult r = cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {  // drivers that want a current context
    DeviceScope scope(launch_device());
    if (scope.status() == HECTOR_OK)
      r = cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  }
  // Memory the driver does not know (CUDA_ERROR_INVALID_VALUE) is plain host memory.
  return r == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE;
}

namespace {

// dst <- src on `stream`, in pieces that never cross a multiple of `piece`
// on the host side (the one that is not device memory: dst when
// `to_host`).
CUresult copy_pieces(const Extra* x, void* dst, const void* src, uint64_t bytes, uint64_t piece,
                     CUstream stream) {
  bool to_host = piece && !is_device_memory(dst);
  for (uint64_t off = 0; off < bytes;) {
    uintptr_t host = reinterpret_cast<uintptr_t>(to_host ? dst : src) + off;
    uint64_t len = bytes - off;
    if (piece) len = std::min<uint64_t>(len, (host / piece + 1) * piece - host);
    CUresult r = x->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst) + off,
                                  reinterpret_cast<CUdeviceptr>(src) + off, len, stream);
    if (r != CUDA_SUCCESS) return r;
    off += len;
  }
  return CUDA_SUCCESS;
}

}  // namespace

bool device_copy(void* dst, const void* src, uint64_t bytes, uint64_t piece) {
  if (bytes == 0) return true;
  std::optional<DeviceScope> scope;
  if (!enter(scope)) return false;
  const Driver* cu = scope->cu();
  // After the entry's kernels: on the caller's stream when one is set.
  // Otherwise the entry runs on a private stream that cannot be named here,
  // so the whole context is waited for and the copy uses the legacy stream.
  CUstream stream = nullptr;
  if (!launch_caller_stream(&stream) &&
      !check(cu, cu->cuCtxSynchronize(),
             "offload: waiting for the entry's kernels (cuCtxSynchronize)"))
    return false;
  return check(cu, copy_pieces(scope->x(), dst, src, bytes, piece, stream),
               "offload: copying a saved value (cuMemcpyAsync)") &&
         check(cu, cu->cuStreamSynchronize(stream),
               "offload: waiting for a copy (cuStreamSynchronize)");
}

void* device_alloc(uint64_t bytes, int* device) {
  *device = launch_device();
  std::optional<DeviceScope> scope;
  if (!enter(scope)) return nullptr;
  CUdeviceptr p = 0;
  if (!check(scope->cu(), scope->cu()->cuMemAlloc(&p, bytes),
             "offload: keeping a value in device memory (cuMemAlloc)"))
    return nullptr;
  return reinterpret_cast<void*>(p);
}

int device_free(void* p, int device) {
  DeviceScope scope(device);
  if (scope.status() != HECTOR_OK) return scope.status();
  CUresult r = scope.x()->cuMemFree(reinterpret_cast<CUdeviceptr>(p));
  return r == CUDA_SUCCESS ? HECTOR_OK : cu_fail(r, "hector_offload_release: cuMemFree");
}

void* pinned_alloc(uint64_t bytes) {
  if (!driver_loaded()) return nullptr;  // no driver: nothing to pin for
  DeviceScope scope(launch_device());
  if (scope.status() != HECTOR_OK) return nullptr;
  void* p = nullptr;
  if (scope.cu()->cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
    return nullptr;
  return p;
}

void pinned_free(void* p) {
  DeviceScope scope(launch_device());
  if (scope.status() == HECTOR_OK) scope.cu()->cuMemFreeHost(p);
}

bool pin_range(void* p, uint64_t bytes) {
  if (!driver_loaded()) return false;  // no driver: nothing to pin for
  DeviceScope scope(launch_device());
  if (scope.status() != HECTOR_OK) return false;
  return scope.cu()->cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
}

void unpin_range(void* p) {
  DeviceScope scope(launch_device());
  if (scope.status() == HECTOR_OK) scope.cu()->cuMemHostUnregister(p);
}

namespace {

// One copy stream per device, made on first use and kept: copies there run
// beside the entry's kernels.
std::mutex g_copy_streams_lock;
std::unordered_map<int, CUstream> g_copy_streams;

CUstream copy_stream(const DeviceScope& scope, int device) {
  std::lock_guard<std::mutex> lock(g_copy_streams_lock);
  auto it = g_copy_streams.find(device);
  if (it != g_copy_streams.end()) return it->second;
  CUstream s = nullptr;
  if (!check(scope.cu(), scope.x()->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
             "offload: the copy stream (cuStreamCreate)"))
    return nullptr;
  g_copy_streams.emplace(device, s);
  return s;
}

}  // namespace

bool copy_async(void* dst, const void* src, uint64_t bytes, const AsyncCopy& then) {
  std::optional<DeviceScope> scope;
  if (!enter(scope)) return false;
  const Driver* cu = scope->cu();
  const Extra* x = scope->x();
  int device = launch_device();
  CUstream copies = copy_stream(*scope, device);
  if (!copies) return false;
  // After the entry's kernels: the copy stream waits for the caller's
  // stream; without one, the host has waited for the entry's private stream
  // before calling (generated code synchronizes before a call), and the
  // context is waited for to be sure.
  CUstream caller = nullptr;
  if (launch_caller_stream(&caller)) {
    CUevent produced = nullptr;
    if (!check(cu, x->cuEventCreate(&produced, CU_EVENT_DISABLE_TIMING), "offload: cuEventCreate") ||
        !check(cu, x->cuEventRecord(produced, caller), "offload: cuEventRecord") ||
        !check(cu, x->cuStreamWaitEvent(copies, produced, 0), "offload: cuStreamWaitEvent"))
      return false;
    x->cuEventDestroy(produced);  // the wait holds what it needs
  } else if (!check(cu, cu->cuCtxSynchronize(),
                    "offload: waiting for the entry's kernels (cuCtxSynchronize)")) {
    return false;
  }
  CUevent done = nullptr;
  if (!check(cu, copy_pieces(x, dst, src, bytes, then.piece, copies),
             "offload: copying a saved value (cuMemcpyAsync)") ||
      !check(cu, x->cuEventCreate(&done, CU_EVENT_DISABLE_TIMING), "offload: cuEventCreate") ||
      !check(cu, x->cuEventRecord(done, copies), "offload: cuEventRecord"))
    return false;
  if (then.host_func &&
      !check(cu, x->cuLaunchHostFunc(copies, then.host_func, then.host_data),
             "offload: cuLaunchHostFunc"))
    return false;
  *then.done = done;
  return true;
}

bool wait_copy(CUevent done) {
  std::optional<DeviceScope> scope;
  if (!enter(scope)) return false;
  CUstream caller = nullptr;
  bool ok = launch_caller_stream(&caller)
                ? check(scope->cu(), scope->x()->cuStreamWaitEvent(caller, done, 0),
                        "offload: waiting for a prefetch (cuStreamWaitEvent)")
                : check(scope->cu(), scope->x()->cuEventSynchronize(done),
                        "offload: waiting for a prefetch (cuEventSynchronize)");
  scope->x()->cuEventDestroy(done);
  return ok;
}

}  // namespace offload
}  // namespace hector
