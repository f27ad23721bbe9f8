// Thread-local last-error message behind hector_last_error().
#ifndef HECTOR_RUNTIME_ERROR_H
#define HECTOR_RUNTIME_ERROR_H

namespace hector {

// Records a printf-style message for this thread and returns `status`, so
// that a failing path reads `return fail(HECTOR_ERROR_..., "...", ...);`.
int fail(int status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Clears the message at the start of a successful API call.
void clear_error();

const char* last_error();

}  // namespace hector

#endif
