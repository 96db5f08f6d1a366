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
#include <new>
#include <type_traits>

#include "api_table.h"
#include "contracts/alloc_fn.h"

namespace hetopt::shim {

struct CallSite;

/// One intercepted OpenCL call. Arguments are widened to 64 bits in table order; callBegin may
/// rewrite them (e.g. add an event the application did not ask for) before the real call.
struct CallRecord {
  api::ApiId id;
  unsigned numArgs;
  uint64_t* args;
  uint64_t result = 0;
  /// Set by callBegin (with `result`): the real function is not called; callEnd still runs.
  bool skip = false;
  /// The interceptor's own per-call state between callBegin and callEnd, zeroed when the call
  /// starts: a mode keeps one trivial struct of its own here, through callState<T>().
  alignas(8) unsigned char state[48] = {};

  template <typename T>
  T& callState() {
    static_assert(std::is_trivial_v<T> && sizeof(T) <= sizeof(state) && alignof(T) <= 8,
                  "a mode's per-call state is a small trivial struct, valid when zeroed");
    return *std::launder(reinterpret_cast<T*>(state));
  }
};

/// An application allocation the shim saw complete.
struct AllocEvent {
  AllocFn fn;
  void* ptr;             ///< the block (never null here)
  size_t size;           ///< requested bytes
  size_t alignment;      ///< requested alignment (0: malloc's)
  void* oldPtr;          ///< realloc: the block it replaced (already invalid), else null
  const CallSite* site;  ///< where it came from; null when size < HETOPT_MIN_TRACKED_SIZE
};

/// The real OpenCL function for `id` (the next layer's or the loader's), never the shim's own
/// export: for a mode's own OpenCL calls, made inside ScopedInternal so that no route records
/// them. Set by the shim's entry points; null where shim_core is linked alone (unit tests).
using NextFunctionLookup = void* (*)(api::ApiId id);
extern NextFunctionLookup g_nextFunction;

/// g_nextFunction typed: `auto fn = realClFunction<decltype(&clFinish)>(api::ApiId::clFinish);`
template <typename Fn>
Fn realClFunction(api::ApiId id) {
  return reinterpret_cast<Fn>(g_nextFunction ? g_nextFunction(id) : nullptr);
}

/// The allocator the program would have had without the shim (dlsym RTLD_NEXT), for memory a
/// mode hands out from it but keeps track of (blocks registered in place). Set by the shim's
/// entry points before any interceptor exists; glibc's own functions where shim_core is linked
/// alone (unit tests).
struct SystemAllocator {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  int (*posixMemalign)(void**, size_t, size_t);
  size_t (*usableSize)(void*);
};
extern const SystemAllocator* g_systemAllocator;

class Interceptor {
 public:
  virtual ~Interceptor() = default;
  virtual void callBegin(CallRecord& call) {}
  virtual void callEnd(CallRecord& call) {}
  /// Whether allocated()/freeing() are wanted; fixed for the interceptor's lifetime. When not,
  /// the malloc family skips the call-site capture (an unwind) they would need.
  virtual bool watchesAllocations() const { return true; }
  /// Every application allocation of at least the tracked size, and every realloc of any size
  /// (so that a tracked block that shrinks is seen leaving).
  virtual void allocated(const AllocEvent& event) {}
  /// Every application free of a non-null pointer, before the memory is returned.
  virtual void freeing(void* ptr) {}
  // ---- serving (optimize mode) ---------------------------------------------------------------
  // The malloc entry points ask serve() before the system allocator, but only when servesSize()
  // and only for application allocations of at least the tracked size (so only those pay for the
  // call-site capture). Every free/realloc/malloc_usable_size asks owns() first.

  /// Whether serve() can return memory for a block of `size` bytes from some site: false lets
  /// the allocation skip the call-site capture (an unwind). Cheap, lock-free, and fixed for the
  /// interceptor's lifetime for any one size.
  virtual bool servesSize(size_t size) const { return false; }
  /// Memory for an allocation at `site`, honouring `alignment` (0: malloc's) and zeroing it for
  /// calloc; null lets the system allocator serve it.
  virtual void* serve(AllocFn fn, size_t size, size_t alignment, const CallSite& site) {
    return nullptr;
  }
  /// True when `ptr` is memory serve() handed out. Called on every free(): must be cheap.
  virtual bool owns(const void* ptr) const { return false; }
  /// free() of owned memory.
  virtual void release(void* ptr) {}
  /// malloc_usable_size() of owned memory.
  virtual size_t usableSize(const void* ptr) const { return 0; }
  /// realloc() of owned memory to `size` (> 0) where the interceptor can keep it; null when it
  /// cannot (ptr is then unchanged and the caller moves it to the system allocator).
  virtual void* resize(void* ptr, size_t size) { return nullptr; }

  // ---- mappings (optimize mode: memory registered in place) -----------------------------------
  // The mmap family's entry points call these only when watchesMappings(): mapped() after an
  // application's mmap succeeded, unmapping() before munmap, mremap, a MAP_FIXED mmap or a
  // discarding madvise reaches the kernel (from any thread, the driver's too).

  /// Whether mapped()/unmapping() are wanted; fixed for the interceptor's lifetime.
  virtual bool watchesMappings() const { return false; }
  /// An application mapping [addr, addr+len) with mmap `flags`; `caller` is its return address.
  virtual void mapped(void* addr, size_t len, int flags, uintptr_t caller) {}
  /// [addr, addr+len) is about to go away (`discard` false) or lose its contents (madvise,
  /// `discard` true). True when it overlapped a mapping the interceptor tracks.
  virtual bool unmapping(void* addr, size_t len, bool discard) { return false; }

  // ---- fork, exec and exit (lifecycle.cpp documents the fork protocol's lock order) ------------
  /// In the program's fork(), before glibc's fork machinery and any atfork handler, with no lock
  /// held: the one place where fork() may wait for another thread (bounded).
  virtual void beforeFork() {}
  /// The program's exit() began on its main thread (or main returned), before any exit handler
  /// runs: the one place exit may wait for another thread (bounded).
  virtual void beforeExit() {}
  /// In the forking thread before fork(): takes every lock of the interceptor's parts, so that the
  /// child inherits none held by a thread it does not have. Never a lock held across an OpenCL
  /// call or a call into the program: the forking thread may be in one (an event callback).
  virtual void forkPrepare() {}
  /// In the parent after fork(): releases them.
  virtual void forkParent() {}
  /// In the child after fork(), where only the forking thread exists: releases them and leaves
  /// the parts usable by a process that has the parent's memory but none of its other threads.
  virtual void forkChild() {}
  /// At normal process exit (atexit); the interceptor is uninstalled right after.
  virtual void processExit() {}
  /// _exit/_Exit: the process ends without its exit handlers.
  virtual void quickExit() {}
  /// exec: the process image is about to be replaced (no exit handlers run).
  virtual void beforeExec() {}
};

}  // namespace hetopt::shim
