// SPDX-License-Identifier: MIT
/**
 * @file Process-wide shim state: the active interceptor and the per-thread nesting depth.
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

enum class Mode : unsigned char { Off, Count, Trace, Optimize };

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

/// Parsed HETOPT_MODE; Off for unknown values (with one warning).
Mode modeFromEnvironment();
const char* modeName(Mode mode);

/// Creates and installs the interceptor for `mode` (no-op for Off). Called once from the shim's
/// constructor; tests call it directly.
void activate(Mode mode);
/// Uninstalls and tears down (atexit, or tests).
void deactivate();

/// The process ends without its exit handlers (_exit, _Exit) or replaces itself (exec): trace
/// mode writes its trace out first (finished, or a snapshot before exec). No-op in other modes.
void processQuickExit();
void processExec();
/// The program calls fork(): the installed interceptor's beforeFork() (not for the shim's own
/// threads, nor while the shim is inside a call).
void processFork();

/// On the main thread: the program's exit() (or main's return) calls the installed interceptor's
/// beforeExit() first, before any exit handler. Other threads' exit() calls are not seen.
void installExitGuard();

/// Registers the shim's fork protocol, once (the shim's start-up does; tests may): atfork
/// handlers that run the installed interceptor's forkPrepare/forkParent/forkChild and hold the
/// module map across fork(). The lock order is documented in state.cpp.
void installForkProtocol();

}  // namespace hetopt::shim
