// The CUDA driver API, opened with dlopen at first use.
//
// Why not link libcuda.so: the library must load (and report a clear error)
// on machines without a driver, such as CI. Why not cudart: the driver API is
// all we need, it keeps the library free of any CUDA runtime version, and it
// shares PyTorch's primary context.
#ifndef HECTOR_RUNTIME_DRIVER_H
#define HECTOR_RUNTIME_DRIVER_H

#include <cuda.h>

namespace hector {

// Every driver entry point the runtime uses. cuda.h maps some names to their
// versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the table is resolved by
// those real names.
#define HECTOR_CU_FUNCTIONS(X)                  \
  X(cuInit)                                     \
  X(cuGetErrorName)                             \
  X(cuGetErrorString)                           \
  X(cuDeviceGetCount)                           \
  X(cuDeviceGet)                                \
  X(cuDeviceGetName)                            \
  X(cuDeviceGetAttribute)                       \
  X(cuDevicePrimaryCtxRetain)                   \
  X(cuCtxPushCurrent)                           \
  X(cuCtxPopCurrent)                            \
  X(cuCtxSynchronize)                           \
  X(cuModuleLoadData)                           \
  X(cuModuleGetFunction)                        \
  X(cuFuncSetAttribute)                         \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuLaunchKernel)                             \
  X(cuStreamSynchronize)                        \
  X(cuMemAlloc)                                 \
  X(cuMemsetD8)                                 \
  X(cuMemcpyDtoH)                               \
  X(cuMemcpyDtoHAsync)                          \
  X(cuMemHostRegister)                          \
  X(cuMemHostUnregister)                        \
  X(cuMemHostAlloc)                             \
  X(cuMemFreeHost)                              \
  X(cuMemHostGetDevicePointer)                  \
  X(cuPointerGetAttribute)                      \
  X(cuMemGetAllocationGranularity)              \
  X(cuMemCreate)                                \
  X(cuMemRelease)                               \
  X(cuMemAddressReserve)                        \
  X(cuMemAddressFree)                           \
  X(cuMemMap)                                   \
  X(cuMemUnmap)                                 \
  X(cuMemSetAccess)

struct Driver {
#define HECTOR_CU_MEMBER(name) decltype(&::name) name;
  HECTOR_CU_FUNCTIONS(HECTOR_CU_MEMBER)
#undef HECTOR_CU_MEMBER
};

// Loads libcuda.so.1 and calls cuInit once. On success *out points to the
// resolved table; otherwise returns NO_DRIVER / NO_DEVICE with a message.
int driver(const Driver** out);

// Records "<what>: <CUDA error name>: <description>" and returns
// HECTOR_ERROR_CUDA (or OUT_OF_MEMORY for allocation failures).
int cu_fail(CUresult r, const char* what);

}  // namespace hector

#endif
