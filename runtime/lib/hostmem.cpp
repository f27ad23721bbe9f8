// Unified host memory: page-locking existing memory in place, and mapped
// pinned allocations.
//
// The GPU maps host memory by pages, but the driver also remembers the exact
// byte range of each registration, and a cudaMemcpy whose host buffer starts
// inside a registered range and runs past its end fails ("invalid
// argument"). Small tensors share pages with unrelated allocations, so the
// runtime registers exact byte ranges only: those of the tensors it is asked
// to map, never a neighbour's bytes.
//
// Two registrations may not share a page, yet two mapped tensors may. So the
// runtime keeps a map of its registrations keyed by their page spans, each
// with a reference count. A new range registers, for each run of pages that
// no registration covers yet, just its own bytes within that run; pages
// already covered are mapped for the GPU already, by the neighbour's
// registration, which the new range then holds a reference on. The GPU reads
// host memory at the host address (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_
// FOR_REGISTERED_MEM, true on x86-64 Linux), so a range spanning several
// registrations is still one device range. Pages pinned by someone else
// (torch pin_memory, cudaHostAlloc) are recognised through
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
  uintptr_t end;   // end of the page span (the map key is its start)
  uintptr_t base;  // first registered byte (what cuMemHostUnregister takes)
  int64_t refs;
  bool owned;      // registered by us (unregister at zero) or pinned elsewhere
  int device;      // whose context registered it (unregistered in the same one)
};

std::mutex g_mutex;
std::map<uintptr_t, Region> g_regions;  // keyed by first page, disjoint page spans

uintptr_t page_size() {
  static const uintptr_t size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// Regions whose page spans overlap [lo, hi), in address order.
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

// Maps the uncovered page run [lo, hi) by registering the caller's bytes in
// it, [b0, b1), which touch every page of the run.
int add_region(const Driver* cu, uintptr_t lo, uintptr_t hi, uintptr_t b0, uintptr_t b1,
               int device) {
  const bool pinned_elsewhere = vmm_contains(b0, b1 - b0) ||
                                (mapped_address(cu, b0) != 0 && mapped_address(cu, b1 - 1) != 0);
  if (!pinned_elsewhere) {
    CUresult r = cu->cuMemHostRegister(reinterpret_cast<void*>(b0), b1 - b0,
                                       CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "host range %#lx..%#lx shares pages with memory pinned by another library; "
                  "pin the whole tensor one way (either hector or torch's pin_memory)",
                  static_cast<unsigned long>(b0), static_cast<unsigned long>(b1));
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemHostRegister");
  }
  g_regions.emplace(lo, Region{hi, b0, 0, !pinned_elsewhere, device});
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
  const uintptr_t q = p + bytes;
  const uintptr_t lo = p & ~(page_size() - 1);
  const uintptr_t hi = (q + page_size() - 1) & ~(page_size() - 1);

  std::lock_guard<std::mutex> lock(g_mutex);
  // Fill the page runs between existing regions; on failure undo this
  // call's new regions so that nothing leaks.
  std::vector<uintptr_t> added;
  auto undo = [&] {
    for (uintptr_t a : added) {
      auto it = g_regions.find(a);
      if (it->second.owned) cu->cuMemHostUnregister(reinterpret_cast<void*>(it->second.base));
      g_regions.erase(it);
    }
  };
  auto fill = [&](uintptr_t run_lo, uintptr_t run_hi) {
    int s = add_region(cu, run_lo, run_hi, run_lo > p ? run_lo : p, run_hi < q ? run_hi : q,
                       device);
    if (s == HECTOR_OK) added.push_back(run_lo);
    return s;
  };
  uintptr_t cursor = lo;
  for (auto it : overlapping(lo, hi)) {
    if (it->first > cursor) {
      if (int s = fill(cursor, it->first)) { undo(); return s; }
    }
    cursor = it->second.end;
  }
  if (cursor < hi) {
    if (int s = fill(cursor, hi)) { undo(); return s; }
  }
  CUdeviceptr dptr = 0;
  if (d->host_pointer_is_device_pointer) {
    dptr = static_cast<CUdeviceptr>(p);
  } else {
    // Without identity mapping, a device address exists only inside one
    // registration: the range must be a single region's own bytes.
    const CUdeviceptr first = mapped_address(cu, p);
    const CUdeviceptr last = mapped_address(cu, q - 1);
    if (first == 0 || last - first != bytes - 1) {
      undo();
      return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                  "this GPU cannot read registered memory at its host address, and %p (+%zu "
                  "bytes) shares pages with another mapped range",
                  ptr, bytes);
    }
    dptr = first;
  }
  for (auto it : overlapping(lo, hi)) ++it->second.refs;
  *device_ptr = reinterpret_cast<void*>(dptr);
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
        CUresult r = d->cu->cuMemHostUnregister(reinterpret_cast<void*>(it->second.base));
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
