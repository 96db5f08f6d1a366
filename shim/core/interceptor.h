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
#include "shim/core/below.h"
#include "shim/core/state.h"

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

  /// Argument `i` as its API type (a pointer or an integer).
  template <typename T>
  T arg(unsigned i) const {
    if constexpr (std::is_pointer_v<T>)
      return reinterpret_cast<T>(static_cast<uintptr_t>(args[i]));
    else
      return static_cast<T>(args[i]);
  }

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

class Interceptor {
 public:
  virtual ~Interceptor() = default;
  virtual void callBegin(CallRecord& call) {}
  virtual void callEnd(CallRecord& call) {}
  /// What the malloc and mmap families must tell it (state.h), asked once at activation: a
  /// capability fixed for the interceptor's lifetime is data, not a virtual call per allocation.
  virtual Wants wants() const { return Wants{}; }
  /// Every application allocation of at least the tracked size, and every realloc of any size
  /// (so that a tracked block that shrinks is seen leaving).
  virtual void allocated(const AllocEvent& event) {}
  /// Every application free of a non-null pointer, before the memory is returned.
  virtual void freeing(void* ptr) {}
  // ---- serving (optimize mode) ---------------------------------------------------------------
  // The malloc entry points ask serve() before the system allocator, but only for sizes in the
  // Wants' serve range and only for application allocations of at least the tracked size (so only
  // those pay for the call-site capture). While a mode serves, every free/realloc/
  // malloc_usable_size asks owns() first.
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
  /// realloc() where serving is at stake: `ptr` is memory owns() claims (`site` null), or an
  /// application block (or null) growing to a size in the serve range at `site`. Whether the block
  /// stays, moves between served memory and the system allocator, or goes (size 0) is the
  /// interceptor's decision: true with the result (C semantics: null leaves `ptr` valid, but for
  /// size 0), false when it takes no part and the system's realloc handles it.
  virtual bool reallocate(void* ptr, size_t size, const CallSite* site, void** result) {
    return false;
  }

  // ---- mappings (optimize mode: memory registered in place) -----------------------------------
  // The mmap family's entry points call these only when the Wants say mappings: mapped() after an
  // application's mmap succeeded, unmapping() before munmap, mremap, a MAP_FIXED mmap or a
  // discarding madvise reaches the kernel (from any thread, the driver's too).
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
  /// exec: the process image is about to be replaced by `program` (no exit handlers run).
  virtual void beforeExec(const char* program) { (void)program; }
};

}  // namespace hetopt::shim
