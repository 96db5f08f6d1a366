// SPDX-License-Identifier: MIT
/** @file Mode selection, activation, fork and exit handling of the shim. */
#include "shim/core/state.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/auxv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/options.h"
#include "shim/core/callsite.h"
#include "shim/core/count_interceptor.h"
#include "shim/core/interceptor.h"
#include "shim/core/optimize_interceptor.h"
#include "shim/core/trace_interceptor.h"

namespace hetopt::shim {

std::atomic<Interceptor*> g_interceptor{nullptr};
NextFunctionLookup g_nextFunction = nullptr;

namespace {
// glibc's own allocator under its internal names: never the shim's exports, so usable wherever
// shim_core runs, until the shim's entry points hand over what dlsym(RTLD_NEXT) found.
extern "C" void* __libc_malloc(size_t);
extern "C" void __libc_free(void*);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);
int libcPosixMemalign(void** out, size_t alignment, size_t size) {
  void* p = __libc_memalign(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
size_t libcUsableSize(void* p) { return malloc_usable_size(p); }
const SystemAllocator s_libcAllocator{__libc_malloc, __libc_free, __libc_calloc, __libc_realloc,
                                      libcPosixMemalign, libcUsableSize};
}  // namespace
const SystemAllocator* g_systemAllocator = &s_libcAllocator;
HETOPT_TLS unsigned t_depth = 0;

namespace {

void forkPrepare() { ++t_depth; }
void forkParent() { --t_depth; }
void forkChild() {
  --t_depth;
  if (Interceptor* i = interceptor()) {
    ScopedInternal internal;
    i->forkChild();
  }
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
      warn("the OpenCL loader %s does not support layers (OPENCL_LAYERS): calls of code that "
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
    std::string item = list.substr(start, end == std::string::npos ? std::string::npos : end - start);
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
    case Mode::Off: return "off";
    case Mode::Count: return "count";
    case Mode::Trace: return "trace";
    case Mode::Optimize: return "optimize";
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
      created = new CountInterceptor();
      break;
    case Mode::Optimize:
      created = OptimizeInterceptor::create();  // null: nothing to optimize (it said why)
      if (!created) return;
      break;
    case Mode::Trace:
      created = TraceInterceptor::create();  // null: the trace file cannot be written (it said why)
      if (!created) return;
      break;
  }
  // Built now, while the process normally has one thread: a fork() during another thread's
  // first use (static initialization, first snapshot) would leave the child waiting forever.
  ModuleMap::instance().refresh();
  s_mode = mode;
  g_interceptor.store(created, std::memory_order_release);
  debug("shim active in %s mode", modeName(mode));
}

void deactivate() {
  Interceptor* old = g_interceptor.exchange(nullptr, std::memory_order_acq_rel);
  // Leaked on purpose: another thread may still be inside a callback of it; process exit frees it.
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
  pthread_atfork(forkPrepare, forkParent, forkChild);
  activate(mode);
  atexit(atExit);
}
