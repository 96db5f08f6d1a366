// SPDX-License-Identifier: MIT
/**
 * @file What every part of the shim reads: the installed interceptor, what it watches, and the
 * thread's nesting depth. Activation, the fork protocol and exit are lifecycle.h's.
 * The depth is how one call is never seen twice and how the shim's own work stays invisible: it is
 * raised while an intercepted OpenCL call runs (so the OpenCL layer route, driver-internal mallocs
 * and nested entry points pass straight through) and while the shim works for itself.
 * Thread safety: g_interceptor and g_watch are written once, at activation (g_watch first, then the
 * interceptor with release); the thread-locals are the thread's own.
 */
#pragma once
#include <atomic>
#include <cstdint>

#include "common/compiler.h"

namespace hetopt::shim {

class Interceptor;

/// Null in pass-through mode: every entry point then forwards at once.
extern std::atomic<Interceptor*> g_interceptor;

/// What a mode wants of the malloc and mmap families, fixed for its lifetime
/// (Interceptor::wants()).
struct Wants {
  bool allocations =
      true;               ///< allocated() and freeing(): each tracked allocation's site is captured
  bool mappings = false;  ///< mapped() and unmapping()
  /// serve() may return memory for sizes in [serveMin, serveMax] (empty: it serves nothing), and
  /// owns() may claim a block.
  uint64_t serveMin = 1, serveMax = 0;
};

/// The installed interceptor's Wants, published once when it is activated (before the interceptor
/// itself): the entry points read it with relaxed loads instead of a virtual call per allocation.
/// Before activation: nothing.
struct Watch {
  std::atomic<bool> allocations{false};
  std::atomic<bool> mappings{false};
  std::atomic<uint64_t> serveMin{1}, serveMax{0};
  void publish(const Wants& w) {
    allocations.store(w.allocations, std::memory_order_relaxed);
    mappings.store(w.mappings, std::memory_order_relaxed);
    serveMin.store(w.serveMin, std::memory_order_relaxed);
    serveMax.store(w.serveMax, std::memory_order_relaxed);
  }
  bool servesSize(uint64_t size) const {
    return size >= serveMin.load(std::memory_order_relaxed) &&
           size <= serveMax.load(std::memory_order_relaxed);
  }
  bool serves() const {
    return serveMin.load(std::memory_order_relaxed) <= serveMax.load(std::memory_order_relaxed);
  }
};
extern constinit Watch g_watch;

/// The thread's nesting depth: above 0 while an intercepted call runs or the shim works for itself.
extern constinit HETOPT_TLS unsigned t_depth;
/// The thread writes the trace out from a fatal signal's handler: its allocations come from the
/// shim's static reserve and its frees of other memory are skipped (shim/preload.cpp), so it never
/// enters an allocator the signal may have interrupted. Its depth is raised too.
extern constinit HETOPT_TLS bool t_inSignalSnapshot;
/// Defined by the shim library's entry points (absent where the core is linked alone): while on,
/// every thread's allocations take the path that looks at t_inSignalSnapshot.
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
