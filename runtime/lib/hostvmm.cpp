// Host memory from the CUDA virtual memory API: one physical allocation on a
// host location, mapped at one virtual address for the device and the CPU.
// Why: memory pinned with cuMemHostRegister / cuMemHostAlloc is translated
// by the GPU in 4 KB pages, and a random gather over a large table then pays
// one translation per row (docs/runtime-unified.md). VMM allocations come in
// 2 MB granules.
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>

#include "device.h"
#include "error.h"
#include "hector/runtime.h"

namespace hector {
namespace {

struct VmmAllocation {
  size_t size;
  CUmemGenericAllocationHandle handle;
  int device;
};

std::mutex g_vmm_mutex;
std::map<uintptr_t, VmmAllocation> g_vmm;

// Undoes a partial allocation; every step tolerates "not done yet".
void release(const Driver* cu, CUdeviceptr va, size_t size, bool mapped,
             CUmemGenericAllocationHandle handle) {
  if (mapped) cu->cuMemUnmap(va, size);
  if (handle) cu->cuMemRelease(handle);
  if (va) cu->cuMemAddressFree(va, size);
}

// True if /proc/self/maps shows [va, va + size) as readable and writable.
bool cpu_read_write(uintptr_t va, size_t size) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[512];
  uintptr_t covered = va;
  const uintptr_t end = va + size;
  while (covered < end && std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = "";
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (lo <= covered && covered < hi) {
      if (perms[0] != 'r' || perms[1] != 'w') break;
      covered = hi;
    }
  }
  std::fclose(f);
  return covered >= end;
}

}  // namespace

bool vmm_contains(uintptr_t p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_vmm_mutex);
  auto it = g_vmm.upper_bound(p);
  if (it == g_vmm.begin()) return false;
  --it;
  return p + bytes <= it->first + it->second.size;
}

}  // namespace hector

using namespace hector;

extern "C" int hector_host_alloc_large_pages(size_t bytes, int device, void** ptr) {
  clear_error();
  if (bytes == 0 || !ptr)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_host_alloc_large_pages: bytes must be > 0 and ptr non-NULL");
  Device* d = nullptr;
  if (int s = get_device(device, &d)) return s;
  ContextScope scope(d);
  if (scope.status()) return scope.status();
  const Driver* cu = d->cu;

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = 0;
  size_t gran = 0;
  CUresult r = cu->cuMemGetAllocationGranularity(&gran, &prop,
                                                 CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (r != CUDA_SUCCESS) return cu_fail(r, "host VMM allocations (cuMemGetAllocationGranularity)");
  const size_t size = (bytes + gran - 1) / gran * gran;

  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  if ((r = cu->cuMemCreate(&handle, size, &prop, 0)) != CUDA_SUCCESS)
    return cu_fail(r, "cuMemCreate (host NUMA node 0)");
  if ((r = cu->cuMemAddressReserve(&va, size, gran, 0, 0)) != CUDA_SUCCESS) {
    release(cu, 0, size, false, handle);
    return cu_fail(r, "cuMemAddressReserve");
  }
  if ((r = cu->cuMemMap(va, size, 0, handle, 0)) != CUDA_SUCCESS) {
    release(cu, va, size, false, handle);
    return cu_fail(r, "cuMemMap");
  }
  CUmemAccessDesc access[2] = {};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[0].location.id = device;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  access[1].location.id = 0;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if ((r = cu->cuMemSetAccess(va, size, access, 2)) != CUDA_SUCCESS) {
    release(cu, va, size, true, handle);
    return cu_fail(r, "cuMemSetAccess (device and host)");
  }
  // Make sure the CPU really can read and write it before anyone touches it
  // (CUDA keeps its virtual ranges reserved PROT_NONE, so an address being
  // mapped at all proves nothing).
  if (!cpu_read_write(static_cast<uintptr_t>(va), size)) {
    release(cu, va, size, true, handle);
    return fail(HECTOR_ERROR_CUDA,
                "host VMM allocation is not readable and writable by the CPU on this driver");
  }
  {
    std::lock_guard<std::mutex> lock(g_vmm_mutex);
    g_vmm[static_cast<uintptr_t>(va)] = VmmAllocation{size, handle, device};
  }
  *ptr = reinterpret_cast<void*>(va);
  return HECTOR_OK;
}

extern "C" int hector_host_free_large_pages(void* ptr) {
  clear_error();
  if (!ptr) return HECTOR_OK;
  VmmAllocation a;
  {
    std::lock_guard<std::mutex> lock(g_vmm_mutex);
    auto it = g_vmm.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == g_vmm.end())
      return fail(HECTOR_ERROR_NOT_REGISTERED,
                  "hector_host_free_large_pages: %p was not allocated by "
                  "hector_host_alloc_large_pages",
                  ptr);
    a = it->second;
    g_vmm.erase(it);
  }
  Device* d = nullptr;
  if (int s = get_device(a.device, &d)) return s;
  ContextScope scope(d);
  if (scope.status()) return scope.status();
  const CUdeviceptr va = reinterpret_cast<uintptr_t>(ptr);
  CUresult r = d->cu->cuMemUnmap(va, a.size);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuMemUnmap");
  if ((r = d->cu->cuMemRelease(a.handle)) != CUDA_SUCCESS) return cu_fail(r, "cuMemRelease");
  if ((r = d->cu->cuMemAddressFree(va, a.size)) != CUDA_SUCCESS)
    return cu_fail(r, "cuMemAddressFree");
  return HECTOR_OK;
}
