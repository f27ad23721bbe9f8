/* Hector: the cap on the temporary buffers of compiled entry points, and the
 * functions every CPU library built by `hectorc --target=cpu` exports.
 *
 * Entry points allocate their temporaries themselves: host memory in a CPU
 * library (its own allocator, linked into it from
 * lib/Target/CPURuntime/CPURuntime.c), device memory in a CUDA library
 * (through libhector_runtime.so, launch.h). Each counts the bytes in use and
 * their peak, and refuses an allocation that would take the bytes in use past
 * its cap: the entry point then stops, frees the temporaries it holds, and
 * reports HECTOR_ERROR_OUT_OF_MEMORY, with a message that names the bytes
 * asked for, the cap and the bytes in use, in a thread-local status the
 * caller reads after the call (below for CPU libraries, launch.h for CUDA
 * ones). Outputs are not valid after a failed call.
 *
 * The cap starts as $HECTOR_TEMPORARY_CAP (bytes, or a number with a K, M, G
 * or T suffix, powers of 1024, as $HECTOR_MEMORY_LIMIT; read at the first
 * allocation or cap query), else none. A malformed value refuses every
 * allocation with HECTOR_ERROR_INVALID_ARGUMENT, saying so, until a cap is
 * set explicitly. The cap counts temporaries in use, not memory kept for
 * reuse (a CPU library's freed blocks are kept only while they fit under the
 * cap with the bytes in use; a CUDA library's pool keeps freed blocks mapped:
 * hector_launch_trim_temporaries).
 */
#ifndef HECTOR_TEMPORARIES_H
#define HECTOR_TEMPORARIES_H

#include <stdint.h>

#include "hector/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A cap of this many bytes is no cap. */
#define HECTOR_NO_TEMPORARY_CAP UINT64_MAX

/* The environment variable that sets the initial cap. */
#define HECTOR_TEMPORARY_CAP_ENV "HECTOR_TEMPORARY_CAP"

/* Parses the variable's format: decimal digits, optionally followed by one
 * of K, M, G, T (either case), nothing else. 1 and *bytes on success, 0 for
 * anything else (empty, signs, spaces, overflow). */
static inline int hector_parse_byte_count(const char* text, uint64_t* bytes) {
  uint64_t value = 0;
  const char* p = text;
  if (!p || *p < '0' || *p > '9') return 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (value > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return 0;
    value = value * 10 + (uint64_t)(*p - '0');
  }
  int shift = 0;
  switch (*p) {
    case 'K': case 'k': shift = 10; ++p; break;
    case 'M': case 'm': shift = 20; ++p; break;
    case 'G': case 'g': shift = 30; ++p; break;
    case 'T': case 't': shift = 40; ++p; break;
    default: break;
  }
  if (*p != '\0' || value > (UINT64_MAX >> shift)) return 0;
  *bytes = value << shift;
  return 1;
}

/* ---- What a CPU library exports ------------------------------------------
 *
 * Defined in each CPU library, not in libhector_runtime.so: resolve them
 * through the library's handle (dlsym). Each library has its own counters,
 * cap and status. All are thread-safe; the counters and the cap are shared
 * by the threads calling the library, the status is per calling thread (the
 * library's worker threads report into the status of the thread whose call
 * they serve). A library built before these existed lacks them. */

/* hector_status of the first failure of an entry point on this thread since
 * the last hector_cpu_clear(): HECTOR_OK, HECTOR_ERROR_OUT_OF_MEMORY (a
 * temporary past the cap, or malloc failed) or HECTOR_ERROR_INVALID_ARGUMENT
 * (a malformed $HECTOR_TEMPORARY_CAP). While a failure is pending, entry
 * points on this thread allocate nothing and stop at their first temporary.
 * A caller therefore does:
 *
 *     hector_cpu_clear();
 *     _mlir_ciface_model(&arg0, &arg1, ...);
 *     if (hector_cpu_status() != HECTOR_OK)
 *       report("model", hector_cpu_error());   // outputs are not valid
 */
int hector_cpu_status(void);
/* Message of that failure ("" if none), valid until the next clear. */
const char* hector_cpu_error(void);
/* Forgets the recorded failure. */
void hector_cpu_clear(void);

/* Caps the bytes of temporaries in use at once (HECTOR_NO_TEMPORARY_CAP:
 * none). Takes effect at the next allocation; a cap below the bytes in use
 * refuses allocations until enough are freed. Returns HECTOR_OK. */
int hector_cpu_set_temporary_cap(uint64_t bytes);
/* The cap now (HECTOR_NO_TEMPORARY_CAP if none; 0 while a malformed
 * $HECTOR_TEMPORARY_CAP refuses every allocation). */
uint64_t hector_cpu_temporary_cap(void);
/* Bytes of temporaries in use now (each block counted at its capacity). */
uint64_t hector_cpu_temporary_bytes(void);
/* The most bytes in use at once since the last reset, and the reset (the
 * peak starts again from the bytes in use). */
uint64_t hector_cpu_peak_temporary_bytes(void);
void hector_cpu_reset_peak_temporary_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* HECTOR_TEMPORARIES_H */
