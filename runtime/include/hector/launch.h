/* Hector runtime: launching the kernels of libraries built by
 * `hectorc --target=cuda`.
 *
 * A generated library calls the mgpu* functions that MLIR's GPU lowering
 * emits (module load, kernel launch, streams, events, device memory); this
 * runtime implements them on the CUDA driver API, in the device's primary
 * context (the one PyTorch uses). The functions below are the caller's
 * side: choose the device and stream, then check the status after calling
 * an entry point.
 *
 * Error model. The generated code has no way to report an error, so the mgpu*
 * functions never abort: the first failure on a thread is recorded in a
 * thread-local launch status, and every later mgpu* call on that thread does
 * nothing (allocations return NULL) until hector_launch_clear(), except the
 * ones that release (free, stream and event destroy), so that a failed call
 * leaks nothing. A caller therefore does:
 *
 *     hector_launch_clear();
 *     _mlir_ciface_model(&arg0, &arg1, ...);
 *     if (hector_launch_status() != HECTOR_OK)
 *       report(hector_launch_error());   // outputs are not valid
 *
 * Kernel faults surface when the entry point waits for its stream, which it
 * does at its end unless HECTOR_STREAM_ASYNC is set.
 *
 * Streams. By default every entry call creates its own stream, runs on it,
 * waits for it and destroys it. hector_set_stream(s, flags) makes entry calls
 * on this thread run on the caller's stream s instead (0 is the legacy
 * default stream, which is also PyTorch's default stream); it is never
 * destroyed, and with HECTOR_STREAM_ASYNC not waited for either, so the call
 * returns as soon as its work is queued. Temporaries are allocated and freed
 * in stream order (cuMemAllocAsync / cuMemFreeAsync where the device has
 * memory pools).
 *
 * Modules. A library's kernels are registered when it is loaded (no GPU work
 * at that point) and loaded into a device's context on their first launch
 * there; they stay loaded until the library is unloaded.
 */
#ifndef HECTOR_LAUNCH_H
#define HECTOR_LAUNCH_H

#include <stdint.h>

#include "hector/runtime.h"
#include "hector/temporaries.h"

#ifdef __cplusplus
extern "C" {
#endif

/* hector_status of the first failed mgpu* call on this thread since the last
 * hector_launch_clear(); HECTOR_OK (0) if none. */
HECTOR_API int hector_launch_status(void);

/* Message of that failure ("" if none), valid until the next clear. */
HECTOR_API const char* hector_launch_error(void);

/* Forgets the recorded failure, so that mgpu* calls work again. */
HECTOR_API void hector_launch_clear(void);

/* CUDA device ordinal that entry points on this thread run on (default 0).
 * Fails with NO_DRIVER / NO_DEVICE (see hector_last_error()). */
HECTOR_API int hector_set_device(int device);

/* Entry points on this thread run on the caller's stream (CUstream or
 * cudaStream_t; 0 is the legacy default stream), which must belong to the
 * chosen device. flags: 0, or HECTOR_STREAM_ASYNC. */
HECTOR_API int hector_set_stream(void* stream, int flags);

/* Back to the default: one private stream per entry call, waited for. */
HECTOR_API void hector_reset_stream(void);

/* Do not wait for the caller's stream at the end of an entry call. */
#define HECTOR_STREAM_ASYNC 1

/* The most bytes of temporary device buffers (gpu.alloc in generated code)
 * live at once since the last reset, in this process: the memory an entry
 * point needs beyond its arguments. */
HECTOR_API uint64_t hector_launch_peak_temporary_bytes(void);
HECTOR_API void hector_launch_reset_peak_temporary_bytes(void);

/* Caps the bytes of temporary device buffers live at once, in this
 * process (all devices together; HECTOR_NO_TEMPORARY_CAP: none; initially
 * $HECTOR_TEMPORARY_CAP, temporaries.h). An allocation past it fails as one
 * the driver refuses: HECTOR_ERROR_OUT_OF_MEMORY in the launch status, with
 * the bytes asked for, the cap and the bytes in use; the entry point's later
 * mgpu* calls do nothing and its frees still run. It applies to the caller's
 * allocator too (hector_launch_set_allocator). Returns HECTOR_OK. */
HECTOR_API int hector_launch_set_temporary_cap(uint64_t bytes);
/* The cap now (HECTOR_NO_TEMPORARY_CAP if none; 0 while a malformed
 * $HECTOR_TEMPORARY_CAP refuses every allocation). */
HECTOR_API uint64_t hector_launch_temporary_cap(void);
/* Bytes of temporary device buffers live now (a buffer whose free waits
 * for an offload copy counts until it is freed). */
HECTOR_API uint64_t hector_launch_temporary_bytes(void);

/* Temporary buffers come from a memory pool per device that keeps freed
 * blocks mapped for the next call (no unmapping and mapping at every
 * synchronisation). This returns the blocks not in use to the driver.
 * Returns HECTOR_OK or an error (hector_launch_error). */
HECTOR_API int hector_launch_trim_temporaries(void);

/* Where temporary buffers come from instead of the runtime's pool: a
 * framework's caching allocator (hector.compiled installs PyTorch's, so
 * that one allocator holds all device memory of the process and its
 * out-of-memory handling sees Hector's buffers). `alloc` returns device
 * memory for `size` bytes, ordered on `stream`, or NULL when it has none
 * (an out-of-memory error); `free` returns it. Both null: the runtime's
 * pool again. Process-wide; refused (HECTOR_ERROR_INVALID_ARGUMENT) while
 * temporaries are live. */
typedef void* (*hector_alloc_fn)(uint64_t size, int device, void* stream, void* context);
typedef void (*hector_free_fn)(void* ptr, int device, void* stream, void* context);
HECTOR_API int hector_launch_set_allocator(hector_alloc_fn alloc, hector_free_fn free,
                                           void* context);

/* Number of times a kernel module was loaded into a context so far (in
 * this process); repeated calls of one entry point do not add to it. */
HECTOR_API int64_t hector_launch_module_loads(void);

#ifdef __cplusplus
}
#endif

#endif /* HECTOR_LAUNCH_H */
