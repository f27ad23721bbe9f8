// What other parts of the runtime called from generated code (the offload
// functions) share with the mgpu* functions of launch.cpp: the thread's
// launch status (hector/launch.h's error model), device and stream.
#ifndef HECTOR_RUNTIME_LAUNCH_STATUS_H
#define HECTOR_RUNTIME_LAUNCH_STATUS_H

#include <cuda.h>

#include "driver.h"

namespace hector {

// Records the first failure on this thread; later ones are consequences.
void record(int status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Records a failed driver call; returns false so callers can `return`.
bool check(const Driver* cu, CUresult r, const char* what);

// The device entry calls on this thread run on (hector_set_device).
int launch_device();

// The caller's stream that entry calls on this thread run on
// (hector_set_stream); false when each entry call makes its own.
bool launch_caller_stream(CUstream* out);

// A temporary that a copy on another stream still reads: its free
// (mgpuMemFree) waits until `done` has completed. Takes the event.
void free_after_copy(CUdeviceptr p, CUevent done);

}  // namespace hector

#endif
