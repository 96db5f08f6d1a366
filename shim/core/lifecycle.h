// SPDX-License-Identifier: MIT
/**
 * @file The shim's life in a process: which mode it runs in, its activation (one interceptor made
 * by its mode's factory, modes.h, and installed), and what it does around fork(), exit, _exit and
 * exec. Everything here is called from the shim's constructor and entry points (or tests); the
 * fork protocol's lock order is written once, in lifecycle.cpp.
 */
#pragma once

namespace hetopt::shim {

enum class Mode : unsigned char { Off, Count, Trace, Optimize };

/// Parsed HETOPT_MODE; Off for unknown values (with one warning).
Mode modeFromEnvironment();
const char* modeName(Mode mode);

/// Creates and installs the interceptor for `mode` (no-op for Off), publishing what it watches
/// (state.h: g_watch) first. Called once from the shim's constructor; tests call it directly.
void activate(Mode mode);
/// Uninstalls and tears down (atexit, or tests).
void deactivate();

/// The process ends without its exit handlers (_exit, _Exit) or replaces itself (exec): trace
/// mode writes its trace out first (finished, or a snapshot before exec). No-op in other modes.
void processQuickExit();
/// `program`: the path or name given to exec (the trace says what the process went on as).
void processExec(const char* program);
/// The program calls fork(): the installed interceptor's beforeFork() (not for the shim's own
/// threads, nor while the shim is inside a call).
void processFork();

/// On the main thread: the program's exit() (or main's return) calls the installed interceptor's
/// beforeExit() first, before any exit handler. Other threads' exit() calls are not seen.
void installExitGuard();

/// Registers the shim's fork protocol, once (the shim's start-up does; tests may): atfork
/// handlers that run the installed interceptor's forkPrepare/forkParent/forkChild and hold the
/// module map across fork(). The lock order is documented in lifecycle.cpp.
void installForkProtocol();

}  // namespace hetopt::shim
