// SPDX-License-Identifier: MIT
/** @file Mode selection, activation, fork and exit handling of the shim; see lifecycle.h.
 * The fork protocol's three steps, the exit handler, choosing and activating a mode. */
#include "shim/core/lifecycle.h"

#include <pthread.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/options.h"
#include "shim/core/callsite.h"
#include "shim/core/interceptor.h"
#include "shim/core/modes.h"
#include "shim/core/state.h"

namespace hetopt::shim {

namespace {

// ---- the fork protocol --------------------------------------------------------------------------
// A forked child has the parent's memory but only the forking thread: a lock another thread held
// at fork() stays held in the child forever (a child freeing an inherited pool block spun on the
// pool's lock). So the shim's one set of atfork handlers takes every lock of its parts before
// fork() and releases them after it, in the parent and in the child. The order, outermost first
// (prepare takes them in this order; parent and child release them in reverse):
//   1. the installed interceptor's, in its forkPrepare():
//        optimize: its preparation's mutex (Preparation), its context choice's (ContextChoice),
//                  the pinned pool (policies::PinnedPool), the in-place
//                  registry (InplaceRegistry), the heap blocks (BlockRegistration), the
//                  direct allocator's table (policies::DirectAllocator), the run's ledger
//                  (SiteLedger)
//        trace:    the recorder (trace::Recorder, the trace interceptor's only mutex)
//        count:    its site table
//   2. the module map's refresh mutex (ModuleMap)
// Why this order: a lock comes after every lock that is ever held while it is taken. The recorder
// and the count table look modules up while held, so the module map is last; the others are
// never held while another is taken. Why these and no others: fork() may come from an event
// callback on a driver thread or while the pool thread is inside the driver, so no lock here is
// held across anything that waits for another thread (a call into the program, an OpenCL call
// that waits for the driver's threads; the recorder is held across device and platform name
// queries only). The direct allocator's policy lock, held across its clFinish, is left out: the
// child never takes it. The handlers run with the thread's depth raised: whatever they allocate
// goes to the system allocator, never into a lock they hold.
/// The interceptor prepared for the fork() in progress (glibc runs one fork() at a time through
/// the handlers): the same one is released even if another is installed meanwhile.
Interceptor* s_forking = nullptr;

void forkPrepare() {
  ++t_depth;
  s_forking = interceptor();
  if (s_forking) s_forking->forkPrepare();
  ModuleMap::instance().lockForFork();
}
void forkParent() {
  ModuleMap::instance().unlockAfterFork();
  if (s_forking) s_forking->forkParent();
  --t_depth;
}
void forkChild() {
  ModuleMap::instance().unlockAfterFork();
  if (s_forking) s_forking->forkChild();
  --t_depth;
}

Mode s_mode = Mode::Off;  ///< the mode activate() installed

// Defined by the shim library's entry points; absent when the core is linked alone (tests).
extern "C" __attribute__((weak)) const char* hetopt_shim_layer_missing();

void atExit() {
  if (Interceptor* i = interceptor()) {
    ScopedInternal internal;
    i->processExit();
  }
  // Only a trace misses what it cannot see; in the other modes it is said once, with the stats.
  if (hetopt_shim_layer_missing && (s_mode == Mode::Trace || optionFlag(Option::STATS))) {
    if (const char* loader = hetopt_shim_layer_missing())
      warn(
          "the OpenCL loader %s does not support layers (OPENCL_LAYERS): calls of code that "
          "dlopen()s libOpenCL were not seen; ocl-icd's loader supports them",
          loader);
  }
  deactivate();
}

// Removes `entry` from a ':'-separated list variable (children then run untouched).
void removeFromList(const char* name, const char* entry) {
  const char* v = getenv(name);
  if (!v || !entry) return;
  std::string list = v, out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    std::string item =
        list.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty() && item != entry) out += (out.empty() ? "" : ":") + item;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (out.empty())
    unsetenv(name);
  else
    setenv(name, out.c_str(), 1);
}

}  // namespace

const char* modeName(Mode mode) {
  switch (mode) {
    case Mode::Off:
      return "off";
    case Mode::Count:
      return "count";
    case Mode::Trace:
      return "trace";
    case Mode::Optimize:
      return "optimize";
  }
  return "?";
}

Mode modeFromEnvironment() {
  // Secure-execution programs (setuid/setgid/capabilities) are never touched.
  if (getauxval(AT_SECURE)) return Mode::Off;
  const char* v = optionString(Option::MODE);
  for (Mode m : {Mode::Off, Mode::Count, Mode::Trace, Mode::Optimize})
    if (!strcmp(v, modeName(m))) return m;
  warn("ignoring HETOPT_MODE=%s (expected off, count, trace or optimize); running unmodified", v);
  return Mode::Off;
}

void activate(Mode mode) {
  ScopedInternal internal;
  Interceptor* created = nullptr;
  switch (mode) {
    case Mode::Off:
      return;
    case Mode::Count:
      created = makeCountInterceptor();
      break;
    case Mode::Optimize:
      created = makeOptimizeInterceptor();
      break;
    case Mode::Trace:
      created = makeTraceInterceptor();
      break;
  }
  if (!created) return;  // it said why
  // Built now, while the process normally has one thread: a fork() during another thread's
  // first use (static initialization, first snapshot) would leave the child waiting forever.
  ModuleMap::instance().refresh();
  s_mode = mode;
  g_watch.publish(created->wants());  // before the interceptor: the entry points read it after
  g_interceptor.store(created, std::memory_order_release);
  debug("shim active in %s mode", modeName(mode));
}

void installForkProtocol() {
  static const bool installed = pthread_atfork(forkPrepare, forkParent, forkChild) == 0;
  (void)installed;
}

void processQuickExit() {
  if (Interceptor* i = interceptor()) {
    ScopedInternal internal;
    i->quickExit();
  }
}

void processExec(const char* program) {
  if (Interceptor* i = interceptor()) {
    ScopedInternal internal;
    i->beforeExec(program);
  }
}

void processFork() {
  if (t_depth > 0) return;  // the shim's own threads, or a driver forking inside a call of ours
  if (Interceptor* i = interceptor()) i->beforeFork();
}

namespace {
/// exit() runs the exiting thread's thread_local destructors before any exit handler, among them
/// those a driver registers while hetopt's thread loads it (after the shim's atexit, so run before
/// it): a destructor of the main thread is the one hook early enough.
struct ExitGuard {
  ~ExitGuard() {
    if (t_depth > 0) return;
    if (Interceptor* i = interceptor()) i->beforeExit();
  }
};
}  // namespace

void installExitGuard() {
  if (gettid() != getpid()) return;  // a shim started late, as a layer on another thread
  static thread_local ExitGuard guard;
  (void)guard;
}

void deactivate() {
  Interceptor* old = g_interceptor.exchange(nullptr, std::memory_order_acq_rel);
  // Leaked on purpose: another thread may still be inside a callback of it; process exit frees it.
  // What it watched stays published: nothing reads it without an interceptor.
  (void)old;
}

}  // namespace hetopt::shim

extern "C" HETOPT_EXPORT void hetopt_shim_init(const char* selfPath) {
  using namespace hetopt;
  using namespace hetopt::shim;
  static bool done = false;
  if (done) return;
  done = true;
  if (!optionFlag(Option::FOLLOW_CHILDREN)) {
    removeFromList("LD_PRELOAD", selfPath);
    removeFromList("OPENCL_LAYERS", selfPath);
  }
  Mode mode = modeFromEnvironment();
  if (mode == Mode::Off) return;
  installForkProtocol();
  activate(mode);
  atexit(atExit);
  installExitGuard();
}
