/* Hector: the ABI of libraries built by `hectorc --target=cpu|cuda`.
 *
 * A library `libmodel.so` exports, per entry point `name` of its manifest
 * (`libmodel.so.json`, docs/backends.md), one C function
 *
 *     void _mlir_ciface_<name>(hector_memref* arg0, hector_memref* arg1, ...);
 *
 * taking one pointer per argument, in manifest order, to a memref
 * descriptor (docs/compilation.md, "Entry points"). It returns nothing:
 * outputs are buffers the caller allocates and the entry point fills. The
 * entry point reads the descriptors only during the call.
 *
 * A rank-r descriptor is
 *
 *     struct { T* allocated; T* aligned; int64_t offset;
 *              int64_t sizes[r]; int64_t strides[r]; };
 *
 * Generated code accepts only the identity (row-major, dense) layout, so a
 * caller sets allocated = aligned = the buffer, offset = 0, sizes = the
 * shape and strides = the row-major strides in elements (hector_memref_init
 * below does exactly that). For `--target=cpu` the buffers are host memory;
 * for `--target=cuda` they are device memory of the device chosen with
 * hector_set_device (launch.h), and the caller checks
 * hector_launch_status() after the call.
 *
 * The element type of each argument is the manifest's "dtype"; this header
 * does not need it, since every descriptor stores untyped pointers.
 *
 * Plain C, header only; usable from C and C++.
 */
#ifndef HECTOR_MODEL_H
#define HECTOR_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Descriptors of ranks 1-4 (what the models of examples/ use). */
typedef struct hector_memref1 {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} hector_memref1;

typedef struct hector_memref2 {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} hector_memref2;

typedef struct hector_memref3 {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} hector_memref3;

typedef struct hector_memref4 {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[4];
  int64_t strides[4];
} hector_memref4;

#define HECTOR_MEMREF_MAX_RANK 4

/* A descriptor of any rank 0..HECTOR_MEMREF_MAX_RANK, for code that learns
 * ranks at run time (from the manifest). The sizes of a rank-r descriptor
 * are dims[0 .. r-1] and its strides dims[r .. 2r-1]: the same bytes as
 * hector_memref<r>, which is what the entry point reads through the pointer
 * (it never reads past 2r entries). */
typedef struct hector_memref {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t dims[2 * HECTOR_MEMREF_MAX_RANK];
} hector_memref;

/* Fills `desc` for a dense row-major buffer `data` of shape sizes[0..rank).
 * Returns 0, or -1 (desc untouched) when rank is outside
 * [0, HECTOR_MEMREF_MAX_RANK] or a size is negative. A zero size is fine
 * (an empty buffer; data may then be NULL). */
static inline int hector_memref_init(hector_memref* desc, void* data, int rank,
                                     const int64_t* sizes) {
  int64_t step = 1;
  int k;
  if (rank < 0 || rank > HECTOR_MEMREF_MAX_RANK) return -1;
  for (k = 0; k < rank; ++k)
    if (sizes[k] < 0) return -1;
  desc->allocated = data;
  desc->aligned = data;
  desc->offset = 0;
  for (k = 0; k < 2 * HECTOR_MEMREF_MAX_RANK; ++k) desc->dims[k] = 0;
  /* Strides of empty dimensions count as 1, as numpy and MLIR do. */
  for (k = rank - 1; k >= 0; --k) {
    desc->dims[k] = sizes[k];
    desc->dims[rank + k] = step;
    step *= sizes[k] > 0 ? sizes[k] : 1;
  }
  return 0;
}

/* Sizes and strides of the generic descriptor line up with the typed ones. */
#if defined(__cplusplus)
static_assert(offsetof(hector_memref, dims) == offsetof(hector_memref2, sizes),
              "descriptor layout");
static_assert(offsetof(hector_memref, dims) + 2 * sizeof(int64_t) ==
                  offsetof(hector_memref2, strides),
              "descriptor layout");
static_assert(sizeof(hector_memref) == sizeof(hector_memref4), "descriptor layout");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(offsetof(hector_memref, dims) == offsetof(hector_memref2, sizes),
               "descriptor layout");
_Static_assert(offsetof(hector_memref, dims) + 2 * sizeof(int64_t) ==
                   offsetof(hector_memref2, strides),
               "descriptor layout");
_Static_assert(sizeof(hector_memref) == sizeof(hector_memref4), "descriptor layout");
#endif

#ifdef __cplusplus
}
#endif

#endif /* HECTOR_MODEL_H */
