// SPDX-License-Identifier: MIT
/**
 * @file Invariant checks in tiers, chosen at build time by HETOPT_DEBUG_LEVEL (the CMake option of
 * that name; unset: 1 without NDEBUG, else 0, so a release build checks nothing):
 *   1  HETOPT_ASSERT           cheap: arguments, the object's own header or slot
 *   2  HETOPT_ASSERT_INTERNAL  the neighbours and links an operation touches
 *   3  HETOPT_VALIDATE         a structure's whole validate() after each operation (tests only)
 * A failed check writes one line with write(2) and aborts: nothing allocates, since it may fire
 * inside malloc, and a corrupt structure inside someone else's process must not be used further.
 */
#pragma once
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/compiler.h"

#ifndef HETOPT_DEBUG_LEVEL
#ifdef NDEBUG
#define HETOPT_DEBUG_LEVEL 0
#else
#define HETOPT_DEBUG_LEVEL 1
#endif
#endif

// Header-only, so that parts linked alone (the pool in its tests) need nothing more.
namespace hetopt {

inline constexpr int kDebugLevel = HETOPT_DEBUG_LEVEL;

/// For validate(): writes why the structure is broken into `why` (when given) and returns false.
inline bool invalid(char* why, size_t whyBytes, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
inline bool invalid(char* why, size_t whyBytes, const char* fmt, ...) {
  if (why != nullptr && whyBytes > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whyBytes, fmt, ap);
    va_end(ap);
  }
  return false;
}

/// "hetopt: <what>: <detail>" on stderr, then abort().
[[noreturn]] HETOPT_NOINLINE HETOPT_COLD inline void checkFailed(const char* what,
                                                                 const char* detail) noexcept {
  const char* parts[] = {"hetopt: ", what, ": ", detail, "\n"};
  for (const char* s : parts) {
    size_t left = strlen(s);
    while (left > 0) {
      const ssize_t n = ::write(STDERR_FILENO, s, left);
      if (n <= 0) break;
      s += n;
      left -= static_cast<size_t>(n);
    }
  }
  abort();
}

/// A failed HETOPT_ASSERT: "hetopt: assertion failed at FILE:LINE: EXPR".
[[noreturn]] HETOPT_NOINLINE HETOPT_COLD inline void assertFailed(const char* expr,
                                                                  const char* file,
                                                                  int line) noexcept {
  char where[320];
  snprintf(where, sizeof where, "assertion failed at %s:%d", file, line);  // glibc: no allocation
  checkFailed(where, expr);
}

/// Level 3: `object.validate(why, whyBytes)` (false with the reason) after an operation.
template <typename T>
inline void validateOrDie(const T& object, const char* what) noexcept {
  char why[256] = {};
  if (HETOPT_UNLIKELY(!object.validate(why, sizeof why))) checkFailed(what, why);
}

}  // namespace hetopt

#if HETOPT_DEBUG_LEVEL >= 1
#define HETOPT_ASSERT(expr) \
  (HETOPT_LIKELY(expr) ? (void)0 : ::hetopt::assertFailed(#expr, __FILE__, __LINE__))
#else
#define HETOPT_ASSERT(expr) ((void)0)
#endif
#if HETOPT_DEBUG_LEVEL >= 2
#define HETOPT_ASSERT_INTERNAL(expr) HETOPT_ASSERT(expr)
#else
#define HETOPT_ASSERT_INTERNAL(expr) ((void)0)
#endif
/// `object` (a structure with validate(char* why, size_t whyBytes)) checked whole, at level 3 only;
/// `what` names it in the message ("pool: heap check failed").
#if HETOPT_DEBUG_LEVEL >= 3
#define HETOPT_VALIDATE(object, what) ::hetopt::validateOrDie(object, what)
#else
#define HETOPT_VALIDATE(object, what) ((void)0)
#endif
