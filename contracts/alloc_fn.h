// SPDX-License-Identifier: MIT
/**
 * @file The allocation functions the shim intercepts. Their values are a file format: traces store
 * them as a leaf's code and an object's alloc fn (trace/FORMAT.md), so the order never changes;
 * a new function is appended. Header-only and allocation-free: the shim's malloc entry points,
 * the trace recorder and reader, and the tools all use this one table.
 */
#pragma once
#include <cstdint>

namespace hetopt {

enum class AllocFn : uint8_t {
  Malloc,
  Calloc,
  Realloc,
  PosixMemalign,
  AlignedAlloc,
  Memalign,
  Valloc,
  Pvalloc
};

/// How many AllocFn values there are: a stored code at or above it is not an allocation function.
inline constexpr unsigned kAllocFnCount = 8;

/// The C name of allocation function `code` ("malloc", "posix_memalign"), "?" when it is none.
inline const char* allocFnName(unsigned code) {
  constexpr const char* kNames[kAllocFnCount] = {"malloc",         "calloc",        "realloc",
                                                 "posix_memalign", "aligned_alloc", "memalign",
                                                 "valloc",         "pvalloc"};
  return code < kAllocFnCount ? kNames[code] : "?";
}
inline const char* allocFnName(AllocFn fn) { return allocFnName(static_cast<unsigned>(fn)); }

}  // namespace hetopt
