// Internal invariants. EMBER_CHECK(cond) states something only a bug in ember can make false; it is
// evaluated in every build type (Release included) and, when false, prints the file, line and condition
// to stderr and aborts. Continuing past a broken invariant would corrupt memory or the cache silently.
//
// Never use it for anything input decides (files, requests, flags, the environment): those are Status
// errors (util/status.h). `assert` is not used in src/ (tests/util/check_test.cc enforces it), so NDEBUG
// changes nothing.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace ember::internal {

[[noreturn, gnu::cold, gnu::noinline]] inline void CheckFailed(const char* file, int line, const char* expr,
                                                              const char* detail) {
  std::fprintf(stderr, "ember: internal check failed at %s:%d: %s%s%s\n", file, line, expr,
               detail[0] != '\0' ? ": " : "", detail);
  std::fflush(stderr);
  std::abort();
}

}  // namespace ember::internal

#define EMBER_CHECK(cond) \
  (__builtin_expect(static_cast<bool>(cond), 1) ? (void)0 : ::ember::internal::CheckFailed(__FILE__, __LINE__, #cond, ""))

// `detail` is a C string (e.g. a Status message) printed after the condition.
#define EMBER_CHECK_MSG(cond, detail)                                                                    \
  (__builtin_expect(static_cast<bool>(cond), 1) ? (void)0                                                \
                                                : ::ember::internal::CheckFailed(__FILE__, __LINE__, #cond, \
                                                                                 (detail)))
