// SPDX-License-Identifier: MIT
/**
 * @file What a mode (count, trace, optimize) plugs into the shim: callbacks around every
 * intercepted OpenCL call and every tracked allocation. Generated wrappers and the malloc entry
 * points call them; they run with the thread's depth raised, so whatever they allocate or call
 * is not seen again.
 */
#pragma once
#include <cstddef>
#include <cstdint>

#include "api_table.h"

namespace hetopt::shim {

struct CallSite;

/// One intercepted OpenCL call. Arguments are widened to 64 bits in table order; callBegin may
/// rewrite them (e.g. add an event the application did not ask for) before the real call.
struct CallRecord {
  api::ApiId id;
  unsigned numArgs;
  uint64_t* args;
  uint64_t result = 0;
  void* scratch[4] = {};  ///< the interceptor's per-call state between begin and end
};

enum class AllocFn : unsigned char {
  Malloc,
  Calloc,
  Realloc,
  PosixMemalign,
  AlignedAlloc,
  Memalign,
  Valloc,
  Pvalloc
};
const char* allocFnName(AllocFn fn);

/// An application allocation the shim saw complete.
struct AllocEvent {
  AllocFn fn;
  void* ptr;             ///< the block (never null here)
  size_t size;           ///< requested bytes
  size_t alignment;      ///< requested alignment (0: malloc's)
  void* oldPtr;          ///< realloc: the block it replaced (already invalid), else null
  const CallSite* site;  ///< where it came from; null when size < HETOPT_MIN_TRACKED_SIZE
};

class Interceptor {
 public:
  virtual ~Interceptor() = default;
  virtual void callBegin(CallRecord& call) {}
  virtual void callEnd(CallRecord& call) {}
  /// Every application allocation of at least the tracked size, and every realloc of any size
  /// (so that a tracked block that shrinks is seen leaving).
  virtual void allocated(const AllocEvent& event) {}
  /// Every application free of a non-null pointer, before the memory is returned.
  virtual void freeing(void* ptr) {}
  /// In the child right after fork(): only the forking thread exists.
  virtual void forkChild() {}
  /// At normal process exit (atexit); the interceptor is uninstalled right after.
  virtual void processExit() {}
};

}  // namespace hetopt::shim
