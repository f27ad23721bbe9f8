// Per-device state: the primary context (shared with PyTorch and cudart), the
// gather kernels' module, and the ring of status words that gathers report
// bad indices through.
#ifndef HECTOR_RUNTIME_DEVICE_H
#define HECTOR_RUNTIME_DEVICE_H

#include <cuda.h>
#include <stdint.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "driver.h"

namespace hector {

// A loaded kernel and how many of its blocks fit on one multiprocessor.
struct Kernel {
  CUfunction f = nullptr;
  int blocks_per_sm = 1;
};

struct Device {
  int ordinal = -1;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int sm_count = 0;
  // Kernels may use a registered host pointer as is (true with unified
  // addressing on x86-64 Linux).
  bool host_pointer_is_device_pointer = false;
  const Driver* cu = nullptr;

  std::mutex mutex;  // guards everything below
  CUmodule module = nullptr;
  std::unordered_map<std::string, Kernel> functions;
  CUdeviceptr status_ring = 0;      // kStatusSlots words in device memory
  uint64_t* host_ring = nullptr;    // pinned copies read back by checked calls
  uint64_t next_tag = 1;
};

constexpr int kStatusSlots = 1024;
constexpr uint64_t kMaxTag = (uint64_t(1) << 24) - 1;

// Returns the state of device `ordinal`, creating it (and retaining the
// primary context) on first use.
int get_device(int ordinal, Device** out);

// Makes the device's context current for the scope (push / pop), so that the
// caller's own current context, if any, is left as it was.
class ContextScope {
 public:
  explicit ContextScope(Device* d);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  int status() const { return status_; }

 private:
  Device* d_;
  int status_;
};

// Looks up a kernel of the embedded module by name (loads the module on first
// use); smem_bytes is the dynamic shared memory it is always launched with.
// Call with a ContextScope active.
int get_kernel(Device* d, const char* name, unsigned smem_bytes, Kernel* out);

// True if [p, p + bytes) lies inside one hector_host_alloc_large_pages
// allocation (already mapped for every device at its host address).
bool vmm_contains(uintptr_t p, size_t bytes);

// Reserves a status slot and tag for one gather (context must be current).
int next_status_slot(Device* d, int* slot, uint64_t* tag);

}  // namespace hector

#endif
