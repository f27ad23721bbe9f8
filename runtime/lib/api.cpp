// The small entry points of runtime.h: versions, errors, devices, and the
// pure circular-shift plan.
#include <cstdio>

#include "device.h"
#include "error.h"
#include "gather_plan.h"
#include "hector/runtime.h"

extern "C" const unsigned long long hector_gather_fatbin_size;

using namespace hector;

extern "C" int hector_abi_version(void) { return HECTOR_RUNTIME_ABI_VERSION; }

extern "C" const char* hector_last_error(void) { return last_error(); }

extern "C" const char* hector_status_name(int status) {
  switch (status) {
    case HECTOR_OK: return "HECTOR_OK";
    case HECTOR_ERROR_INVALID_ARGUMENT: return "HECTOR_ERROR_INVALID_ARGUMENT";
    case HECTOR_ERROR_NO_DRIVER: return "HECTOR_ERROR_NO_DRIVER";
    case HECTOR_ERROR_NO_DEVICE: return "HECTOR_ERROR_NO_DEVICE";
    case HECTOR_ERROR_CUDA: return "HECTOR_ERROR_CUDA";
    case HECTOR_ERROR_INDEX_OUT_OF_RANGE: return "HECTOR_ERROR_INDEX_OUT_OF_RANGE";
    case HECTOR_ERROR_NO_KERNELS: return "HECTOR_ERROR_NO_KERNELS";
    case HECTOR_ERROR_NOT_REGISTERED: return "HECTOR_ERROR_NOT_REGISTERED";
    case HECTOR_ERROR_OUT_OF_MEMORY: return "HECTOR_ERROR_OUT_OF_MEMORY";
    case HECTOR_ERROR_IO: return "HECTOR_ERROR_IO";
    default: return "HECTOR_ERROR_UNKNOWN";
  }
}

extern "C" int hector_has_kernels(void) { return hector_gather_fatbin_size > 0 ? 1 : 0; }

extern "C" int hector_device_count(int* count) {
  clear_error();
  if (!count) return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_device_count: count is NULL");
  *count = 0;
  const Driver* cu = nullptr;
  if (int s = driver(&cu)) return s;
  CUresult r = cu->cuDeviceGetCount(count);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuDeviceGetCount");
  if (*count == 0) return fail(HECTOR_ERROR_NO_DEVICE, "no CUDA device found");
  return HECTOR_OK;
}

extern "C" int hector_device_name(int device, char* buf, size_t buf_len) {
  clear_error();
  if (!buf || buf_len == 0)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_device_name: empty buffer");
  buf[0] = '\0';
  Device* d = nullptr;
  if (int s = get_device(device, &d)) return s;
  CUresult r = d->cu->cuDeviceGetName(buf, static_cast<int>(buf_len), d->dev);
  return r == CUDA_SUCCESS ? HECTOR_OK : cu_fail(r, "cuDeviceGetName");
}

extern "C" int hector_row_plan(uint64_t row_addr, int64_t row_bytes, uint64_t* hull_start,
                               int64_t* n_chunks, int64_t* shift) {
  clear_error();
  if (row_bytes < 0 || !hull_start || !n_chunks || !shift)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT,
                "hector_row_plan: row_bytes must be >= 0 and the outputs non-NULL");
  if (row_bytes > (int64_t(1) << 35))
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_row_plan: row_bytes over 32 GiB");
  if (row_addr > UINT64_MAX - static_cast<uint64_t>(row_bytes) - 32)
    return fail(HECTOR_ERROR_INVALID_ARGUMENT, "hector_row_plan: row end overflows");
  const RowPlan p = plan_row(row_addr, static_cast<uint64_t>(row_bytes));
  *hull_start = p.hull;
  *n_chunks = p.chunks;
  *shift = p.shift;
  return HECTOR_OK;
}
