// Unified host memory: page-locking existing memory in place, and mapped
// pinned allocations.
//
// cuMemHostRegister refuses ranges that overlap an earlier registration, but
// tensors from malloc share pages, and one tensor can be wrapped twice. So the
// runtime keeps its own map of the page ranges it has registered, with a
// reference count each: a new range registers only the pages nobody covers
// yet, and a region is unregistered when its count drops to zero. Pages pinned
// by someone else (torch pin_memory, cudaHostAlloc) are recognised through
// cuPointerGetAttribute and kept as external regions that are never unpinned.
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "device.h"
#include "error.h"
#include "hector/runtime.h"

namespace hector {
namespace {

struct Region {
  uintptr_t end;
  int64_t refs;
  bool owned;  // registered by us (unregister at zero) or pinned elsewhere
  int device;  // whose context registered it (unregistered in the same one)
};

std::mutex g_mutex;
std::map<uintptr_t, Region> g_regions;  // keyed by first page, disjoint

uintptr_t page_size() {
  static const uintptr_t size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// Regions overlapping [lo, hi), in address order.
std::vector<std::map<uintptr_t, Region>::iterator> overlapping(uintptr_t lo, uintptr_t hi) {
  std::vector<std::map<uintptr_t, Region>::iterator> out;
  auto it = g_regions.upper_bound(lo);
  if (it != g_regions.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > lo) it = prev;
  }
  for (; it != g_regions.end() && it->first < hi; ++it) out.push_back(it);
  return out;
}

// The device address of a host address, or 0 if it is not pinned and mapped.
CUdeviceptr mapped_address(const Driver* cu, uintptr_t host) {
  CUdeviceptr dptr = 0;
  CUresult r = cu->cuPointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                         static_cast<CUdeviceptr>(host));
  return r == CUDA_SUCCESS ? dptr : 0;
}

// Registers the uncovered page range [lo, hi) as one region; [p, p_end) is
// the caller's byte range (pinned allocations of others need not fill whole
// pages, so that is what is probed).
int add_region(const Driver* cu, uintptr_t lo, uintptr_t hi, uintptr_t p, uintptr_t p_end,
               int device) {
  const uintptr_t probe_lo = lo > p ? lo : p;
  const uintptr_t probe_hi = hi < p_end ? hi : p_end;
  const bool pinned_elsewhere =
      mapped_address(cu, probe_lo) != 0 && mapped_address(cu, probe_hi - 1) != 0;
  if (!pinned_elsewhere) {
    CUresult r = cu->cuMemHostRegister(reinterpret_cast<void*>(lo), hi - lo,
                                       CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "host range %#lx..%#lx is partly pinned by another library; pin the whole "
                  "tensor one way (either hector or torch's pin_memory)",
                  static_cast<unsigned long>(lo), static_cast<unsigned long>(hi));
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemHostRegister");
  }
  g_regions.emplace(lo, Region{hi, 0, !pinned_elsewhere, device});
  return HECTOR_OK;
}

}  // namespace
}  // namespace hector

using namespace hector;

extern "C" int hector_host_register(void* ptr, size_t bytes, int device, void** device_ptr) {
  clear_error();
  if (!ptr || bytes == 0 || !device_ptr)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_host_register: ptr and device_ptr must be non-NULL and bytes > 0");
  Device* d = nullptr;
  if (int s = get_device(device, &d)) return s;
  ContextScope scope(d);
  if (scope.status()) return scope.status();
  const Driver* cu = d->cu;
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t lo = p & ~(page_size() - 1);
  const uintptr_t hi = (p + bytes + page_size() - 1) & ~(page_size() - 1);

  std::lock_guard<std::mutex> lock(g_mutex);
  // Fill the gaps between existing regions; on failure undo this call's
  // new regions so that nothing leaks.
  std::vector<uintptr_t> added;
  uintptr_t cursor = lo;
  auto undo = [&] {
    for (uintptr_t a : added) {
      auto it = g_regions.find(a);
      if (it->second.owned) cu->cuMemHostUnregister(reinterpret_cast<void*>(a));
      g_regions.erase(it);
    }
  };
  for (auto it : overlapping(lo, hi)) {
    if (it->first > cursor) {
      if (int s = add_region(cu, cursor, it->first, p, p + bytes, device)) { undo(); return s; }
      added.push_back(cursor);
    }
    cursor = it->second.end;
  }
  if (cursor < hi) {
    if (int s = add_region(cu, cursor, hi, p, p + bytes, device)) { undo(); return s; }
    added.push_back(cursor);
  }
  // With unified addressing the mapping is the identity, so a range spanning
  // several regions is still one contiguous device range; check it.
  const CUdeviceptr first = mapped_address(cu, p);
  const CUdeviceptr last = mapped_address(cu, p + bytes - 1);
  if (first == 0 || last == 0 || last - first != bytes - 1) {
    undo();
    return fail(HECTOR_ERROR_CUDA,
                "host range %p (+%zu bytes) is pinned but not mapped contiguously for the GPU",
                ptr, bytes);
  }
  for (auto it : overlapping(lo, hi)) ++it->second.refs;
  *device_ptr = reinterpret_cast<void*>(first);
  return HECTOR_OK;
}

extern "C" int hector_host_unregister(void* ptr, size_t bytes) {
  clear_error();
  if (!ptr || bytes == 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_host_unregister: ptr must be non-NULL and bytes > 0");
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t lo = p & ~(page_size() - 1);
  const uintptr_t hi = (p + bytes + page_size() - 1) & ~(page_size() - 1);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto regions = overlapping(lo, hi);
  // A registered range is always covered end to end by regions.
  uintptr_t cursor = lo;
  for (auto it : regions) {
    if (it->first > cursor) break;
    cursor = it->second.end;
  }
  if (regions.empty() || cursor < hi)
    return fail(HECTOR_ERROR_NOT_REGISTERED,
                "hector_host_unregister: %p (+%zu bytes) was not registered", ptr, bytes);
  int status = HECTOR_OK;
  for (auto it : regions) {
    if (--it->second.refs > 0) continue;
    if (it->second.owned) {
      Device* d = nullptr;
      if (int s = get_device(it->second.device, &d)) {
        status = s;
      } else {
        ContextScope scope(d);
        CUresult r = d->cu->cuMemHostUnregister(reinterpret_cast<void*>(it->first));
        if (scope.status()) status = scope.status();
        else if (r != CUDA_SUCCESS) status = cu_fail(r, "cuMemHostUnregister");
      }
    }
    g_regions.erase(it);
  }
  return status;
}

extern "C" int hector_host_alloc(size_t bytes, int device, void** host_ptr, void** device_ptr) {
  clear_error();
  if (bytes == 0 || !host_ptr || !device_ptr)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_host_alloc: bytes must be > 0 and the output pointers non-NULL");
  Device* d = nullptr;
  if (int s = get_device(device, &d)) return s;
  ContextScope scope(d);
  if (scope.status()) return scope.status();
  void* host = nullptr;
  CUresult r = d->cu->cuMemHostAlloc(&host, bytes,
                                     CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemHostAlloc");
  CUdeviceptr dptr = 0;
  r = d->cu->cuMemHostGetDevicePointer(&dptr, host, 0);
  if (r != CUDA_SUCCESS) {
    d->cu->cuMemFreeHost(host);
    return cu_fail(r, "cuMemHostGetDevicePointer");
  }
  *host_ptr = host;
  *device_ptr = reinterpret_cast<void*>(dptr);
  return HECTOR_OK;
}

extern "C" int hector_host_free(void* host_ptr) {
  clear_error();
  if (!host_ptr) return HECTOR_OK;
  const Driver* cu = nullptr;
  if (int s = driver(&cu)) return s;
  CUresult r = cu->cuMemFreeHost(host_ptr);
  return r == CUDA_SUCCESS ? HECTOR_OK : cu_fail(r, "cuMemFreeHost");
}
