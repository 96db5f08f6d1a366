// SPDX-License-Identifier: MIT
/**
 * @file What lies below the shim: the functions its entry points forward to, and that its parts
 * call instead of the exports they would reach (the system allocator, the mapping calls,
 * sigaction and signal, the process calls, the OpenCL lookup). All are found in one place
 * (shim/preload.cpp's resolveBelow(): dlsym(RTLD_NEXT), at the first allocation or the shim's
 * constructor, whichever comes first) and published at once, before any mode exists.
 * Where shim_core is linked alone (unit tests), g_below is glibc's own functions and no OpenCL; a
 * test points it at a copy with a fake OpenCL lookup. Read-only after publication: no lock.
 */
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstddef>

#include "api_table.h"

namespace hetopt::shim {

/// The allocator the program would have had without the shim.
struct SystemAllocator {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  int (*posixMemalign)(void**, size_t, size_t);
  size_t (*usableSize)(void*);
  void* (*alignedAlloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
};

/// The mmap family (watched in optimize mode: memory registered in place).
struct SystemMappings {
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  int (*munmap)(void*, size_t);
  void* (*mremap)(void*, size_t, size_t, int, ...);
  int (*madvise)(void*, size_t, int);
};

/// The calls that end or replace the process, or copy it.
struct SystemProcess {
  void (*exit)(int);  ///< _exit
  void (*Exit)(int);  ///< _Exit
  pid_t (*fork)();
  int (*execve)(const char*, char* const[], char* const[]);
  int (*execv)(const char*, char* const[]);
  int (*execvp)(const char*, char* const[]);
  int (*execvpe)(const char*, char* const[], char* const[]);
};

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);

/// The real OpenCL function for `id` (the next layer's or the loader's), never the shim's own
/// export: for a mode's own OpenCL calls, made inside ScopedInternal so that no route records them.
using NextFunctionLookup = void* (*)(api::ApiId id);

struct Below {
  SystemAllocator allocator;
  SystemMappings mappings;          ///< null where shim_core is linked alone (nothing there maps)
  SystemProcess process;            ///< likewise
  SigactionFn sigaction;            ///< the next sigaction (a sanitizer's, else libc's)
  SignalFn signal;                  ///< null: made from sigaction
  NextFunctionLookup nextFunction;  ///< null: no OpenCL (shim_core linked alone)
};

/// Never null: glibc's own until the shim's entry points publish what they resolved.
extern const Below* g_below;

/// The lookup typed: `auto fn = realClFunction<decltype(&clFinish)>(api::ApiId::clFinish);`
template <typename Fn>
Fn realClFunction(api::ApiId id) {
  const NextFunctionLookup next = g_below->nextFunction;
  return reinterpret_cast<Fn>(next ? next(id) : nullptr);
}

}  // namespace hetopt::shim
