// SPDX-License-Identifier: MIT
/**
 * @file The process-ending entry points of the preloaded shim: _exit and _Exit (a process that
 * ends without its exit handlers, as Python's multiprocessing workers do with os._exit), the exec
 * family that takes an argument vector (the process image is replaced), and fork(). Trace mode
 * writes its trace first (shim/core/state.h); the call then goes on to the real function, status
 * and errors as they were. posix_spawn, system() and vfork() do not come here: their children
 * only exec.
 */
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/core/lifecycle.h"
#include "shim/core/state.h"
#include "shim/entry_points.h"

namespace {

using hetopt::shim::belowNow;

/// `fn` as resolved below, else found now (another thread is resolving what lies below).
template <typename Fn>
Fn* orNext(Fn* fn, const char* name) {
  return fn ? fn : reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
}

[[noreturn]] void endProcess(void (*real)(int), const char* name, int status) {
  hetopt::shim::processQuickExit();
  if (auto fn = orNext(real, name)) fn(status);
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace

extern "C" {

// glibc's exit() and execl*() reach _exit and execve inside libc, not through these: exit() is
// served by the shim's exit handler and, on the main thread, first by its exit guard
// (installExitGuard, shim/core/state.h).
HETOPT_EXPORT void _exit(int status) { endProcess(belowNow().process.exit, "_exit", status); }
HETOPT_EXPORT void _Exit(int status) { endProcess(belowNow().process.Exit, "_Exit", status); }

// The interceptor may first wait for one of its threads (optimize mode: hetopt's driver start-up),
// where glibc's atfork handlers could not (they run under glibc's atfork lock, which a driver
// starting up may need).
HETOPT_EXPORT pid_t fork(void) {
  hetopt::shim::processFork();
  return orNext(belowNow().process.fork, "fork")();
}

HETOPT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  hetopt::shim::processExec(path);
  const auto real = orNext(belowNow().process.execve, "execve");
  return real ? real(path, argv, envp) : static_cast<int>(syscall(SYS_execve, path, argv, envp));
}

HETOPT_EXPORT int execv(const char* path, char* const argv[]) {
  hetopt::shim::processExec(path);
  const auto real = orNext(belowNow().process.execv, "execv");
  return real ? real(path, argv) : static_cast<int>(syscall(SYS_execve, path, argv, environ));
}

HETOPT_EXPORT int execvp(const char* file, char* const argv[]) {
  hetopt::shim::processExec(file);
  return orNext(belowNow().process.execvp, "execvp")(file, argv);
}

HETOPT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  hetopt::shim::processExec(file);
  return orNext(belowNow().process.execvpe, "execvpe")(file, argv, envp);
}

}  // extern "C"
