#include "driver.h"

#include <cstdio>
#include <dlfcn.h>

#include <mutex>

#include "error.h"
#include "hector/runtime.h"

namespace hector {
namespace {

#define HECTOR_STR2(x) #x
#define HECTOR_STR(x) HECTOR_STR2(x)

struct Loaded {
  Driver table{};
  int status = HECTOR_OK;
  char message[512] = "";
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    l.status = HECTOR_ERROR_NO_DRIVER;
    snprintf(l.message, sizeof l.message,
             "no CUDA driver: libcuda.so.1 could not be loaded (%s); a GPU and "
             "its driver are needed for this call",
             why ? why : "unknown reason");
    return l;
  }
  // HECTOR_STR(name) expands cuda.h's versioning macros first, giving the
  // symbol the header's prototypes refer to.
#define HECTOR_CU_RESOLVE(name)                                                   \
  l.table.name = reinterpret_cast<decltype(l.table.name)>(dlsym(lib, HECTOR_STR(name))); \
  if (!l.table.name) {                                                            \
    l.status = HECTOR_ERROR_NO_DRIVER;                                            \
    snprintf(l.message, sizeof l.message,                                         \
             "CUDA driver too old: libcuda.so.1 lacks %s", HECTOR_STR(name));     \
    return l;                                                                     \
  }
  HECTOR_CU_FUNCTIONS(HECTOR_CU_RESOLVE)
#undef HECTOR_CU_RESOLVE
  CUresult r = l.table.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    l.table.cuGetErrorName(r, &name);
    l.status = (r == CUDA_ERROR_NO_DEVICE) ? HECTOR_ERROR_NO_DEVICE : HECTOR_ERROR_NO_DRIVER;
    snprintf(l.message, sizeof l.message,
             r == CUDA_ERROR_NO_DEVICE ? "no CUDA device found (cuInit: %s)"
                                       : "the CUDA driver failed to initialise (cuInit: %s)",
             name ? name : "unknown error");
  }
  return l;
}

}  // namespace

int driver(const Driver** out) {
  // Loaded once; a failure is remembered, since dlopen and cuInit would fail
  // the same way again.
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (loaded.status != HECTOR_OK) return fail(loaded.status, "%s", loaded.message);
  *out = &loaded.table;
  return HECTOR_OK;
}

int cu_fail(CUresult r, const char* what) {
  const Driver* d = nullptr;
  const char* name = "unknown CUDA error";
  const char* text = "";
  if (driver(&d) == HECTOR_OK) {
    d->cuGetErrorName(r, &name);
    d->cuGetErrorString(r, &text);
  }
  int status = (r == CUDA_ERROR_OUT_OF_MEMORY) ? HECTOR_ERROR_OUT_OF_MEMORY : HECTOR_ERROR_CUDA;
  return fail(status, "%s: %s (%s)", what, name ? name : "?", text ? text : "");
}

}  // namespace hector
