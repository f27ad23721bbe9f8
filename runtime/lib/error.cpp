#include "error.h"

#include <cstdarg>
#include <cstdio>

namespace hector {
namespace {
// One message per thread, so that concurrent callers never see each other's
// errors (the contract of hector_last_error in runtime.h).
thread_local char g_message[1024] = "";
}  // namespace

int fail(int status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_message, sizeof g_message, fmt, ap);
  va_end(ap);
  return status;
}

void clear_error() { g_message[0] = '\0'; }

const char* last_error() { return g_message; }

}  // namespace hector
