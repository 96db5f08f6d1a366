// SPDX-License-Identifier: MIT
/**
 * @file What every part of the shim reads: the installed interceptor and the thread's nesting
 * depth. Activation, the fork protocol and exit are lifecycle.h's.
 *
 * The depth is how one call is never seen twice and how the shim's own work stays invisible: it is
 * raised while an intercepted OpenCL call runs (so the OpenCL layer route, driver-internal mallocs
 * and nested entry points pass straight through) and while the shim works for itself.
 */
#pragma once
#include <atomic>

#include "common/compiler.h"

namespace hetopt::shim {

class Interceptor;

/// Null in pass-through mode: every entry point then forwards at once.
extern std::atomic<Interceptor*> g_interceptor;
extern HETOPT_TLS unsigned t_depth;

/// t_depth at or above this: the thread writes the trace out from a fatal signal's handler. Its
/// allocations then come from the shim's static reserve and its frees of other memory are skipped
/// (preload.cpp), so it never enters an allocator the signal may have interrupted.
inline constexpr unsigned kSignalDepth = 1u << 16;
/// Defined by the shim library's entry points (absent where the core is linked alone): while on,
/// every thread's allocations take the path that honours kSignalDepth.
extern "C" __attribute__((weak)) void hetopt_shim_signal_allocations(bool on);

inline bool interceptActive() { return g_interceptor.load(std::memory_order_relaxed) != nullptr; }
inline bool insideInterceptedCall() { return t_depth != 0; }
inline Interceptor* interceptor() { return g_interceptor.load(std::memory_order_acquire); }

/// Marks the shim's own work on this thread: OpenCL calls and allocations made inside are not the
/// application's and are neither recorded nor redirected.
class ScopedInternal {
 public:
  ScopedInternal() { ++t_depth; }
  ~ScopedInternal() { --t_depth; }
  ScopedInternal(const ScopedInternal&) = delete;
  ScopedInternal& operator=(const ScopedInternal&) = delete;
};

}  // namespace hetopt::shim
