#include "device.h"

#include <cstdio>
#include <memory>

#include "error.h"
#include "gather_params.h"
#include "hector/runtime.h"

// The fatbin built from gather_kernels.cu (size 0 when built without nvcc).
extern "C" const unsigned char hector_gather_fatbin[];
extern "C" const unsigned long long hector_gather_fatbin_size;

namespace hector {
namespace {
constexpr int kGatherThreads = kThreads;
std::mutex g_devices_mutex;
std::unordered_map<int, std::unique_ptr<Device>> g_devices;
}  // namespace

int get_device(int ordinal, Device** out) {
  const Driver* cu = nullptr;
  if (int s = driver(&cu)) return s;
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  auto it = g_devices.find(ordinal);
  if (it != g_devices.end()) {
    *out = it->second.get();
    return HECTOR_OK;
  }
  int count = 0;
  CUresult r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuDeviceGetCount");
  if (count == 0) return fail(HECTOR_ERROR_NO_DEVICE, "no CUDA device found");
  if (ordinal < 0 || ordinal >= count)
    return fail(HECTOR_ERROR_NO_DEVICE, "CUDA device %d does not exist (%d device%s present)",
                ordinal, count, count == 1 ? "" : "s");
  auto d = std::make_unique<Device>();
  d->ordinal = ordinal;
  d->cu = cu;
  if ((r = cu->cuDeviceGet(&d->dev, ordinal)) != CUDA_SUCCESS) return cu_fail(r, "cuDeviceGet");
  if ((r = cu->cuDeviceGetAttribute(&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                    d->dev)) != CUDA_SUCCESS)
    return cu_fail(r, "cuDeviceGetAttribute");
  int host_ptr_ok = 0;
  if ((r = cu->cuDeviceGetAttribute(&host_ptr_ok,
                                    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                                    d->dev)) != CUDA_SUCCESS)
    return cu_fail(r, "cuDeviceGetAttribute");
  d->host_pointer_is_device_pointer = host_ptr_ok != 0;
  // The primary context is the one PyTorch and cudart use: tensors and
  // streams they made are valid in it. It is retained for the life of the
  // process.
  if ((r = cu->cuDevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS)
    return cu_fail(r, "cuDevicePrimaryCtxRetain");
  *out = d.get();
  g_devices.emplace(ordinal, std::move(d));
  return HECTOR_OK;
}

ContextScope::ContextScope(Device* d) : d_(d), status_(HECTOR_OK) {
  CUresult r = d_->cu->cuCtxPushCurrent(d_->ctx);
  if (r != CUDA_SUCCESS) {
    status_ = cu_fail(r, "cuCtxPushCurrent");
    d_ = nullptr;
  }
}

ContextScope::~ContextScope() {
  if (d_) {
    CUcontext popped = nullptr;
    d_->cu->cuCtxPopCurrent(&popped);
  }
}

int get_kernel(Device* d, const char* name, unsigned smem_bytes, Kernel* out) {
  std::lock_guard<std::mutex> lock(d->mutex);
  auto it = d->functions.find(name);
  if (it != d->functions.end()) {
    *out = it->second;
    return HECTOR_OK;
  }
  if (!d->module) {
    if (hector_gather_fatbin_size == 0)
      return fail(HECTOR_ERROR_NO_KERNELS,
                  "this libhector_runtime was built without nvcc: it has no GPU kernels");
    CUresult r = d->cu->cuModuleLoadData(&d->module, hector_gather_fatbin);
    if (r != CUDA_SUCCESS)
      return cu_fail(r, "loading the gather kernels (cuModuleLoadData; they are built for "
                        "sm_90 with PTX for newer GPUs)");
  }
  CUfunction f = nullptr;
  CUresult r = d->cu->cuModuleGetFunction(&f, d->module, name);
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "cuModuleGetFunction(%s)", name);
    return cu_fail(r, what);
  }
  Kernel k;
  k.f = f;
  r = d->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&k.blocks_per_sm, f, kGatherThreads,
                                                         smem_bytes);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (k.blocks_per_sm < 1) k.blocks_per_sm = 1;
  d->functions.emplace(name, k);
  *out = k;
  return HECTOR_OK;
}

int next_status_slot(Device* d, int* slot, uint64_t* tag) {
  std::lock_guard<std::mutex> lock(d->mutex);
  const Driver* cu = d->cu;
  CUresult r;
  if (!d->status_ring) {
    if ((r = cu->cuMemAlloc(&d->status_ring, kStatusSlots * sizeof(uint64_t))) != CUDA_SUCCESS)
      return cu_fail(r, "allocating the gather status ring (cuMemAlloc)");
    if ((r = cu->cuMemsetD8(d->status_ring, 0, kStatusSlots * sizeof(uint64_t))) != CUDA_SUCCESS)
      return cu_fail(r, "cuMemsetD8");
    // The memset runs on the legacy stream; gathers may use other streams.
    if ((r = cu->cuCtxSynchronize()) != CUDA_SUCCESS) return cu_fail(r, "cuCtxSynchronize");
    void* host = nullptr;
    if ((r = cu->cuMemHostAlloc(&host, kStatusSlots * sizeof(uint64_t), 0)) != CUDA_SUCCESS)
      return cu_fail(r, "allocating the gather status readback (cuMemHostAlloc)");
    d->host_ring = static_cast<uint64_t*>(host);
  }
  if (d->next_tag > kMaxTag) {
    // Tags are 24 bits: after 16M calls, drain the device and clear the ring
    // so that old (larger) tags cannot shadow new ones.
    if ((r = cu->cuCtxSynchronize()) != CUDA_SUCCESS) return cu_fail(r, "cuCtxSynchronize");
    if ((r = cu->cuMemsetD8(d->status_ring, 0, kStatusSlots * sizeof(uint64_t))) != CUDA_SUCCESS)
      return cu_fail(r, "cuMemsetD8");
    if ((r = cu->cuCtxSynchronize()) != CUDA_SUCCESS) return cu_fail(r, "cuCtxSynchronize");
    d->next_tag = 1;
  }
  *tag = d->next_tag++;
  *slot = static_cast<int>(*tag % kStatusSlots);
  return HECTOR_OK;
}

}  // namespace hector
