/* Compiles runtime.h as C99 and exercises the library without needing a GPU:
 * prints the device count, or the runtime's message when there is none.
 * Exit status: 0 when the library answered coherently (either way). */
#include <stdio.h>
#include <string.h>

#include "hector/runtime.h"

int main(void) {
  int count = -1;
  int status;
  if (hector_abi_version() != HECTOR_RUNTIME_ABI_VERSION) {
    fprintf(stderr, "ABI mismatch: library %d, header %d\n", hector_abi_version(),
            HECTOR_RUNTIME_ABI_VERSION);
    return 1;
  }
  status = hector_device_count(&count);
  if (status == HECTOR_OK) {
    printf("kernels: %d, CUDA devices: %d\n", hector_has_kernels(), count);
    return 0;
  }
  printf("kernels: %d, %s: %s\n", hector_has_kernels(), hector_status_name(status),
         hector_last_error());
  /* Without a GPU the message must say why. */
  return strlen(hector_last_error()) > 0 ? 0 : 1;
}
