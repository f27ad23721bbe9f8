/* Hector runtime: unified (pinned, GPU-mapped) host memory and zero-copy
 * row gathers.
 *
 * Plain C ABI, loaded by trainers and by the Python package through ctypes.
 *
 * Conventions
 *  - Every function returns an int status code (hector_status): 0 is success.
 *  - On failure, hector_last_error() returns a human-readable message for the
 *    calling thread (thread-local; valid until the next runtime call on that
 *    thread). The library never exits or aborts the process.
 *  - The CUDA driver (libcuda.so.1) is opened with dlopen on first use, so the
 *    library loads on machines without CUDA; there every CUDA-backed call
 *    returns HECTOR_ERROR_NO_DRIVER.
 *  - Device pointers and streams are the CUDA driver's (CUdeviceptr as void*,
 *    CUstream as void*); a cudaStream_t from the runtime API or
 *    torch.cuda.Stream.cuda_stream is the same handle. Work runs in the
 *    device's primary context, the one PyTorch and the CUDA runtime use.
 */
#ifndef HECTOR_RUNTIME_H
#define HECTOR_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; only these are exported. */
#if defined(__GNUC__)
#define HECTOR_API __attribute__((visibility("default")))
#else
#define HECTOR_API
#endif

/* Bumped whenever a signature or struct below changes, and when functions
 * the Python package calls are added (4: the tensor cache's host pool and
 * reads of several values), so that a stale library is refused with
 * "rebuild the runtime" instead of failing on a missing symbol. */
#define HECTOR_RUNTIME_ABI_VERSION 4

typedef enum hector_status {
  HECTOR_OK = 0,
  HECTOR_ERROR_INVALID_ARGUMENT = 1,   /* a bad pointer, size, flag or layout */
  HECTOR_ERROR_NO_DRIVER = 2,          /* libcuda.so.1 missing or unusable */
  HECTOR_ERROR_NO_DEVICE = 3,          /* no CUDA device, or ordinal out of range */
  HECTOR_ERROR_CUDA = 4,               /* a CUDA driver call failed */
  HECTOR_ERROR_INDEX_OUT_OF_RANGE = 5, /* a gather index outside [0, rows) */
  HECTOR_ERROR_NO_KERNELS = 6,         /* library built without nvcc */
  HECTOR_ERROR_NOT_REGISTERED = 7,     /* unregister of memory never registered */
  HECTOR_ERROR_OUT_OF_MEMORY = 8,      /* host or device allocation failed */
  HECTOR_ERROR_IO = 9                  /* a file read or write failed, or read
                                          back data did not match its checksum */
} hector_status;

/* HECTOR_RUNTIME_ABI_VERSION of the loaded library. Never fails. */
HECTOR_API int hector_abi_version(void);

/* Message of the last failed call on this thread ("" if none). */
HECTOR_API const char* hector_last_error(void);

/* Short constant name of a status code, e.g. "HECTOR_ERROR_NO_DRIVER". */
HECTOR_API const char* hector_status_name(int status);

/* 1 if GPU kernels were compiled into this library, else 0. Never fails. */
HECTOR_API int hector_has_kernels(void);

/* Number of CUDA devices. Fails with NO_DRIVER / NO_DEVICE / CUDA. */
HECTOR_API int hector_device_count(int* count);

/* Name of a device ("NVIDIA H100 80GB HBM3"), NUL-terminated into buf. */
HECTOR_API int hector_device_name(int device, char* buf, size_t buf_len);

/* ---- Unified host memory --------------------------------------------- */

/* Page-locks [ptr, ptr + bytes) in place and maps it for every device
 * (cuMemHostRegister, PORTABLE | DEVICEMAP). Only these exact bytes are
 * registered, never a neighbour's (a cudaMemcpy from a buffer that starts in
 * a registered range and runs past it fails). Registrations are reference
 * counted: repeated or overlapping calls are fine, a range sharing a page
 * with an earlier one is mapped through it (the earlier one stays pinned
 * until both are unregistered), and memory already pinned by someone else
 * (torch pin_memory, cudaHostAlloc, hector_host_alloc*) is accepted as is.
 * *device_ptr receives the address a kernel uses to read ptr (ptr itself on
 * x86-64 Linux). `device` selects the context used for the call (any device
 * works; the mapping is portable). Every successful call must be matched by
 * one hector_host_unregister(ptr, bytes) before the memory is freed. */
HECTOR_API int hector_host_register(void* ptr, size_t bytes, int device, void** device_ptr);

/* Drops one reference taken by hector_host_register on the same range;
 * registrations whose count reaches zero are unpinned (only those this
 * library pinned). */
HECTOR_API int hector_host_unregister(void* ptr, size_t bytes);

/* Allocates `bytes` of pinned host memory mapped for every device
 * (cuMemHostAlloc, PORTABLE | DEVICEMAP). */
HECTOR_API int hector_host_alloc(size_t bytes, int device, void** host_ptr, void** device_ptr);

/* Frees memory from hector_host_alloc. */
HECTOR_API int hector_host_free(void* host_ptr);

/* Allocates `bytes` (rounded up to the 2 MB allocation granularity) of host
 * memory through the CUDA virtual memory API (cuMemCreate on a host location),
 * mapped for the device and the CPU at one address. The point: the GPU maps it
 * with large pages, so random gathers over a big table need far fewer address
 * translations than memory pinned with 4 KB pages. *ptr is valid on host and
 * device. Fails with HECTOR_ERROR_CUDA on drivers without host VMM
 * allocations (before CUDA 12.2). Experimental: on the H200 VM measured in
 * docs/runtime-unified.md it gathered no faster than registered memory. */
HECTOR_API int hector_host_alloc_large_pages(size_t bytes, int device, void** ptr);

/* Frees memory from hector_host_alloc_large_pages. */
HECTOR_API int hector_host_free_large_pages(void* ptr);

/* ---- Zero-copy gather --------------------------------------------------- */

/* dst[i] = src[index[i]] for i in [0, n_index), one row of row_bytes each
 * (dst[dst_index[i]] = src[index[i]] with a scatter list).
 * src may be mapped host memory (the point of this library) or device memory.
 * Any row_bytes, any alignment of src, dst and the strides is accepted:
 * 16-byte aligned layouts take a pure 16-byte vector path, others a path that
 * reads aligned 16-byte chunks and realigns them in shared memory. Reads of a
 * row start on a 128-byte boundary and wrap around inside the row
 * (circular-shift alignment), so that every PCIe read is a whole line. */
typedef struct hector_gather_desc {
  const void* src;    /* device-visible address of row 0 */
  int64_t src_rows;   /* valid indices are [0, src_rows) */
  int64_t src_stride; /* bytes between rows of src, >= row_bytes */
  int64_t row_bytes;  /* bytes per row, >= 0 */
  const void* index;  /* device pointer to n_index indices */
  int64_t n_index;    /* number of rows to gather, 0 <= n_index < 2^39 */
  int32_t index_bytes;/* 4 (int32) or 8 (int64) */
  int32_t flags;      /* HECTOR_GATHER_* below, or-ed */
  void* dst;          /* device pointer, n_index rows */
  int64_t dst_stride; /* bytes between rows of dst, >= row_bytes */
  int32_t device;     /* CUDA device ordinal that runs the kernel */
  int32_t reserved;   /* must be 0 */
  void* stream;       /* CUstream / cudaStream_t; NULL: the legacy stream */
  const void* dst_index; /* NULL, or a device pointer to n_index int64 output
                          * rows, a permutation of [0, n_index): row i goes to
                          * dst row dst_index[i]. Sorting the indices and
                          * passing the sort's permutation here reads a large
                          * table in address order, which needs far fewer
                          * host-page translations (docs/runtime-unified.md). */
} hector_gather_desc;

/* Wait for the kernel and report the first bad index as
 * HECTOR_ERROR_INDEX_OUT_OF_RANGE (costs a stream synchronisation).
 * Without it, bad rows are silently written as zeros and never read. */
#define HECTOR_GATHER_CHECK 1
/* An index -k (1 <= k <= src_rows) means row src_rows - k, as in torch
 * tensor indexing. Without it negative indices are out of range. */
#define HECTOR_GATHER_WRAP_NEGATIVE 2
/* Use the naive reference kernel (one thread per element, no alignment
 * tricks). For benchmarks and tests only. */
#define HECTOR_GATHER_NAIVE 4
/* Use the realigning path even when the layout is 16-byte aligned (tests). */
#define HECTOR_GATHER_FORCE_GENERAL 8

/* Launches the gather on desc->stream. With HECTOR_GATHER_CHECK, on an
 * out-of-range index, *bad_position and *bad_index (either may be NULL)
 * receive the lowest offending position i and index[i]; with dst_index, some
 * offending i (the lowest in the given order) and *bad_position is
 * dst_index[i]. A dst_index entry outside [0, n_index) is never written
 * through; with the check it fails with HECTOR_ERROR_INVALID_ARGUMENT. */
HECTOR_API int hector_gather(const hector_gather_desc* desc, int64_t* bad_position,
                  int64_t* bad_index);

/* ---- Introspection (pure functions, no GPU needed) ---------------------- */

/* The circular-shift plan the gather kernels use for one row at address
 * row_addr: the row's 16-byte aligned hull starts at *hull_start and has
 * *n_chunks chunks of 16 bytes; lane c of the row's lane group loads chunk
 * (*shift + c) mod *n_chunks, so lane 0 starts on the first 128-byte boundary
 * inside the hull (or at the hull start if the row has none). */
HECTOR_API int hector_row_plan(uint64_t row_addr, int64_t row_bytes, uint64_t* hull_start,
                    int64_t* n_chunks, int64_t* shift);

/* The kernel variant hector_gather would launch for desc, as text (e.g.
 * "aligned16/g32" or "general/g16"), written into buf. Validates desc like
 * hector_gather but needs no GPU. */
HECTOR_API int hector_gather_variant(const hector_gather_desc* desc, char* buf, size_t buf_len);

#ifdef __cplusplus
}
#endif

#endif /* HECTOR_RUNTIME_H */
