// SPDX-License-Identifier: MIT
/**
 * @file The malloc-family and mmap-family entry points of the preloaded shim, and its constructor. Only entry
 * points and dlsym(RTLD_NEXT) live here (style habit 3); what a mode does with an allocation lives
 * behind the Interceptor in shim/core.
 *
 * Hot path (pass-through or untracked size): one byte load, one indirect call. No lock, no
 * allocation, no syscall.
 * Bootstrap: dlsym() itself allocates, so until the real functions are known, requests are served
 * from a static buffer that free() recognises and ignores (heaptrack's DummyPool). The same buffer
 * is the reserve of a thread that writes the trace out from a fatal signal's handler
 * (kSignalDepth): it never enters the allocator the signal may have interrupted.
 * Signals: sigaction() and signal() for the signals trace mode watches go to
 * shim/core/fatal_signals, which keeps them as the program's actions.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "common/options.h"
#include "shim/core/callsite.h"
#include "shim/core/fatal_signals.h"
#include "shim/core/interceptor.h"
#include "shim/core/state.h"

extern "C" void hetopt_shim_init(const char* selfPath);

namespace {

using namespace hetopt::shim;
using hetopt::AllocFn;

// The system allocator: what shim_core uses too (g_systemAllocator points at its base), and the
// entry points only the preloaded library forwards.
struct RealAllocator : SystemAllocator {
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
};
RealAllocator s_real;

// The mmap family: watched in optimize mode so that memory registered in place is released before
// the program gives it back (shim/core/inplace_registry.h). Until resolved, the raw system calls.
struct RealMapping {
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  int (*munmap)(void*, size_t);
  void* (*mremap)(void*, size_t, size_t, int, ...);
  int (*madvise)(void*, size_t, int);
};
RealMapping s_realMap;

/// kSignal: a thread writes the trace from a signal handler (hetopt_shim_signal_allocations):
/// every allocation looks at its thread's depth.
enum : unsigned char { kUnresolved, kResolving, kReady, kSignal };
std::atomic<unsigned char> s_state{kUnresolved};
size_t s_minTracked = 4096;
unsigned s_siteDepth = 4;

// ---- bootstrap buffer --------------------------------------------------------------------------
// Mostly the signal reserve (a trace's snapshot and zstd's workspace); untouched pages cost nothing.
constexpr size_t kBootstrapBytes = 8 * 1024 * 1024;
alignas(64) char s_bootstrap[kBootstrapBytes];
std::atomic<size_t> s_bootstrapUsed{0};
constexpr size_t kHeader = 16;  // keeps the block size in front of each block (for realloc)

inline bool inBootstrap(const void* p) {
  return p >= s_bootstrap && p < s_bootstrap + kBootstrapBytes;
}

void* bootstrapAlloc(size_t size, size_t alignment = 16) {
  alignment = std::max<size_t>(alignment, 16);
  size_t used = s_bootstrapUsed.load(std::memory_order_relaxed);
  for (;;) {
    uintptr_t base = reinterpret_cast<uintptr_t>(s_bootstrap) + used + kHeader;
    uintptr_t aligned = (base + alignment - 1) & ~(alignment - 1);
    size_t end = aligned + size - reinterpret_cast<uintptr_t>(s_bootstrap);
    if (end > kBootstrapBytes) {
      if (t_depth >= kSignalDepth) return nullptr;  // a signal's snapshot gives up, the program goes on
      static const char msg[] = "hetopt: bootstrap allocation buffer exhausted\n";
      ssize_t w = write(2, msg, sizeof msg - 1);
      (void)w;
      abort();
    }
    if (s_bootstrapUsed.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      reinterpret_cast<size_t*>(aligned)[-1] = size;
      return reinterpret_cast<void*>(aligned);  // static storage: already zero (calloc-safe)
    }
  }
}

inline size_t bootstrapSize(const void* p) { return static_cast<const size_t*>(p)[-1]; }

template <typename Fn>
void resolveOne(Fn*& slot, const char* name) {
  slot = reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
  if (!slot) {
    // Style habit 4: a missing required symbol is fatal, with a message that needs no malloc.
    static const char msg[] = "hetopt: cannot find the system allocator (dlsym RTLD_NEXT)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    abort();
  }
}

// Returns true when the real allocator is usable; false while this thread is resolving it.
bool ensureResolved() {
  unsigned char st = s_state.load(std::memory_order_acquire);
  if (HETOPT_LIKELY(st == kReady)) return true;
  if (st == kSignal) return t_depth < kSignalDepth;
  unsigned char expected = kUnresolved;
  if (!s_state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel))
    return s_state.load(std::memory_order_acquire) == kReady;  // another thread is resolving
  resolveOne(s_real.malloc, "malloc");
  resolveOne(s_real.free, "free");
  resolveOne(s_real.calloc, "calloc");
  resolveOne(s_real.realloc, "realloc");
  resolveOne(s_real.posixMemalign, "posix_memalign");
  resolveOne(s_real.aligned_alloc, "aligned_alloc");
  resolveOne(s_real.memalign, "memalign");
  resolveOne(s_real.valloc, "valloc");
  resolveOne(s_real.pvalloc, "pvalloc");
  resolveOne(s_real.usableSize, "malloc_usable_size");
  resolveOne(s_realMap.mmap, "mmap");
  resolveOne(s_realMap.munmap, "munmap");
  resolveOne(s_realMap.mremap, "mremap");
  resolveOne(s_realMap.madvise, "madvise");
  g_systemAllocator = &s_real;
  s_state.store(kReady, std::memory_order_release);
  return true;
}

// ---- hooked paths (an interceptor is installed) -----------------------------------------------

HETOPT_NOINLINE void noteAllocation(AllocFn fn, void* ptr, size_t size, size_t alignment,
                                              void* oldPtr) {
  ScopedInternal internal;
  Interceptor* i = interceptor();
  if (!i || !i->watchesAllocations()) return;
  CallSite site;
  const CallSite* sitePtr = nullptr;
  if (size >= s_minTracked) {
    captureCallSite(&site, s_siteDepth);
    // The driver's own memory, or the runtime's (no frame outside libc/libstdc++/ld.so, e.g.
    // libstdc++'s exception pool at start-up): not an application allocation.
    bool foreign = site.fromDriver || site.depth == 0;
    if (foreign && fn != AllocFn::Realloc) return;
    sitePtr = foreign ? nullptr : &site;
  }
  i->allocated(AllocEvent{fn, ptr, size, alignment, oldPtr, sitePtr});
}

// Tracked: the application's own (not the shim's, not inside an OpenCL call) and large enough.
inline bool tracked(size_t size) {
  return HETOPT_UNLIKELY(interceptActive()) && size >= s_minTracked && t_depth == 0;
}

HETOPT_NOINLINE void noteFree(void* ptr) {
  ScopedInternal internal;
  Interceptor* i = interceptor();
  if (i && i->watchesAllocations()) i->freeing(ptr);
}

// Optimize mode: memory for a tracked application allocation from the interceptor, or null.
HETOPT_NOINLINE void* serveAllocation(AllocFn fn, size_t size, size_t alignment) {
  Interceptor* i = interceptor();
  if (!i || !i->servesSize(size)) return nullptr;
  ScopedInternal internal;
  CallSite site;
  captureCallSite(&site, s_siteDepth);
  if (site.fromDriver || site.depth == 0) return nullptr;
  return i->serve(fn, size, alignment, site);
}

// The interceptor that handed out `ptr`, or null (system memory). Every free() asks this while an
// interceptor is installed; count/trace interceptors answer with one inline-able virtual call.
inline Interceptor* ownerOf(const void* ptr) {
  Interceptor* i = interceptor();
  return (i && i->owns(ptr)) ? i : nullptr;
}

// The interceptor when it watches mappings (optimize mode with registrations), else null.
inline Interceptor* mappingWatcher() {
  if (HETOPT_LIKELY(!interceptActive())) return nullptr;
  Interceptor* i = interceptor();
  return i && i->watchesMappings() ? i : nullptr;
}

bool unmapping(Interceptor* i, void* addr, size_t len, bool discard) {
  ScopedInternal internal;
  return i->unmapping(addr, len, discard);
}

void mapped(Interceptor* i, void* addr, size_t len, int flags, void* caller) {
  if (t_depth != 0) return;  // the shim's own or made inside an OpenCL call: the driver's
  ScopedInternal internal;
  i->mapped(addr, len, flags, reinterpret_cast<uintptr_t>(caller));
}

inline bool resolved() { return s_state.load(std::memory_order_acquire) == kReady; }

// The next sigaction (a sanitizer's, else libc's), resolved on first use.
SigactionFn realSigaction() {
  static std::atomic<SigactionFn> real{nullptr};
  SigactionFn fn = real.load(std::memory_order_acquire);
  if (HETOPT_UNLIKELY(!fn)) {
    fn = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
    if (!fn) fn = g_realSigaction;
    real.store(fn, std::memory_order_release);
  }
  return fn;
}

// Advice that replaces a range's pages: pinned pages would no longer be the program's.
inline bool discardsContents(int advice) {
  return advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE
#ifdef MADV_DONTNEED_LOCKED
         || advice == MADV_DONTNEED_LOCKED
#endif
      ;
}

}  // namespace

// ---- exported entry points ---------------------------------------------------------------------

extern "C" {

HETOPT_EXPORT void* malloc(size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) return bootstrapAlloc(size);
  if (tracked(size)) {
    if (void* served = serveAllocation(AllocFn::Malloc, size, 0)) return served;
  }
  void* p = s_real.malloc(size);
  if (tracked(size) && p) noteAllocation(AllocFn::Malloc, p, size, 0, nullptr);
  return p;
}

HETOPT_EXPORT void free(void* ptr) {
  if (HETOPT_UNLIKELY(ptr == nullptr || inBootstrap(ptr))) return;
  if (HETOPT_UNLIKELY(interceptActive())) {
    if (Interceptor* owner = ownerOf(ptr)) {
      ScopedInternal internal;
      owner->release(ptr);
      return;
    }
    // Recorded before the real free: no other thread can reuse the address in between.
    if (t_depth == 0)
      noteFree(ptr);
    else if (HETOPT_UNLIKELY(t_depth >= kSignalDepth))
      return;  // a signal handler's snapshot: the allocator may be the code it interrupted
  }
  s_real.free(ptr);
}

HETOPT_EXPORT void* calloc(size_t count, size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) return nullptr;
    return bootstrapAlloc(bytes);
  }
  size_t bytes;
  if (tracked(count) && !__builtin_mul_overflow(count, size, &bytes) && tracked(bytes)) {
    if (void* served = serveAllocation(AllocFn::Calloc, bytes, 0)) return served;
  }
  void* p = s_real.calloc(count, size);
  bytes = count * size;  // no overflow: calloc succeeded
  if (p && tracked(bytes)) noteAllocation(AllocFn::Calloc, p, bytes, 0, nullptr);
  return p;
}

HETOPT_EXPORT void* realloc(void* ptr, size_t size) {
  if (HETOPT_UNLIKELY(inBootstrap(ptr))) {
    void* p = malloc(size);
    if (p) memcpy(p, ptr, std::min(size, bootstrapSize(ptr)));
    return p;
  }
  if (HETOPT_UNLIKELY(!ensureResolved())) {
    void* p = bootstrapAlloc(size);
    // A system block (only in a signal handler's snapshot: bootstrap knows no other) is copied.
    if (p && ptr) memcpy(p, ptr, std::min(size, s_real.usableSize(ptr)));
    return p;
  }
  if (HETOPT_LIKELY(!interceptActive())) return s_real.realloc(ptr, size);
  if (Interceptor* owner = ptr ? ownerOf(ptr) : nullptr) {
    ScopedInternal internal;
    if (size == 0) {
      owner->release(ptr);
      return nullptr;
    }
    if (void* kept = owner->resize(ptr, size)) return kept;
    void* moved = s_real.malloc(size);  // the pool is full: move the block to the system
    if (!moved) return nullptr;          // C semantics: ptr stays valid
    memcpy(moved, ptr, std::min(size, owner->usableSize(ptr)));
    owner->release(ptr);
    return moved;
  }
  if (t_depth != 0) return s_real.realloc(ptr, size);
  if (tracked(size)) {
    // A candidate site growing a system block (or realloc(NULL)): move it into served memory.
    if (void* served = serveAllocation(AllocFn::Realloc, size, 0)) {
      if (ptr) {
        memcpy(served, ptr, std::min(size, s_real.usableSize(ptr)));
        noteFree(ptr);
        s_real.free(ptr);
      }
      return served;
    }
  }
  if (ptr && size == 0) {  // glibc frees the block and returns null
    noteFree(ptr);
    return s_real.realloc(ptr, 0);
  }
  void* p = s_real.realloc(ptr, size);
  // Every application realloc is reported (a tracked block may shrink below the tracked size).
  if (p) noteAllocation(AllocFn::Realloc, p, size, 0, ptr);
  return p;
}

HETOPT_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) {
    *out = bootstrapAlloc(size, alignment);
    return *out ? 0 : ENOMEM;
  }
  if (tracked(size) && alignment && !(alignment & (alignment - 1)) && alignment % sizeof(void*) == 0) {
    if (void* served = serveAllocation(AllocFn::PosixMemalign, size, alignment)) {
      *out = served;
      return 0;
    }
  }
  int rc = s_real.posixMemalign(out, alignment, size);
  if (rc == 0 && tracked(size)) noteAllocation(AllocFn::PosixMemalign, *out, size, alignment, nullptr);
  return rc;
}

HETOPT_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) return bootstrapAlloc(size, alignment);
  if (tracked(size) && alignment && !(alignment & (alignment - 1))) {
    if (void* served = serveAllocation(AllocFn::AlignedAlloc, size, alignment)) return served;
  }
  void* p = s_real.aligned_alloc(alignment, size);
  if (p && tracked(size)) noteAllocation(AllocFn::AlignedAlloc, p, size, alignment, nullptr);
  return p;
}

HETOPT_EXPORT void* memalign(size_t alignment, size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) return bootstrapAlloc(size, alignment);
  if (tracked(size) && alignment && !(alignment & (alignment - 1))) {
    if (void* served = serveAllocation(AllocFn::Memalign, size, alignment)) return served;
  }
  void* p = s_real.memalign(alignment, size);
  if (p && tracked(size)) noteAllocation(AllocFn::Memalign, p, size, alignment, nullptr);
  return p;
}

HETOPT_EXPORT void* valloc(size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) return bootstrapAlloc(size, 4096);
  if (tracked(size)) {
    if (void* served = serveAllocation(AllocFn::Valloc, size, 4096)) return served;
  }
  void* p = s_real.valloc(size);
  if (p && tracked(size)) noteAllocation(AllocFn::Valloc, p, size, 4096, nullptr);
  return p;
}

HETOPT_EXPORT void* pvalloc(size_t size) {
  if (HETOPT_UNLIKELY(!ensureResolved())) return bootstrapAlloc((size + 4095) & ~size_t{4095}, 4096);
  void* p = s_real.pvalloc(size);
  if (p && tracked(size)) noteAllocation(AllocFn::Pvalloc, p, size, 4096, nullptr);
  return p;
}

HETOPT_EXPORT size_t malloc_usable_size(void* ptr) {
  if (ptr == nullptr) return 0;
  if (inBootstrap(ptr)) return bootstrapSize(ptr);
  if (HETOPT_UNLIKELY(!ensureResolved())) return 0;
  if (HETOPT_UNLIKELY(interceptActive())) {
    if (Interceptor* owner = ownerOf(ptr)) return owner->usableSize(ptr);
  }
  return s_real.usableSize(ptr);
}

HETOPT_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (HETOPT_UNLIKELY(!resolved()))
    return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
  Interceptor* i = mappingWatcher();
  if (HETOPT_UNLIKELY(i != nullptr) && (flags & MAP_FIXED)) unmapping(i, addr, len, false);
  void* p = s_realMap.mmap(addr, len, prot, flags, fd, offset);
  if (HETOPT_UNLIKELY(i != nullptr) && p != MAP_FAILED)
    mapped(i, p, len, flags, __builtin_return_address(0));
  return p;
}

HETOPT_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, len, prot, flags, fd, offset);
}

HETOPT_EXPORT int munmap(void* addr, size_t len) {
  if (HETOPT_UNLIKELY(!resolved())) return static_cast<int>(syscall(SYS_munmap, addr, len));
  if (Interceptor* i = mappingWatcher()) unmapping(i, addr, len, false);
  return s_realMap.munmap(addr, len);
}

HETOPT_EXPORT void* mremap(void* old, size_t oldLen, size_t newLen, int flags, ...) {
  void* newAddr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    newAddr = va_arg(ap, void*);
    va_end(ap);
  }
  if (HETOPT_UNLIKELY(!resolved()))
    return reinterpret_cast<void*>(syscall(SYS_mremap, old, oldLen, newLen, flags, newAddr));
  Interceptor* i = mappingWatcher();
  bool tracked = false;
  if (HETOPT_UNLIKELY(i != nullptr)) {
    tracked = unmapping(i, old, oldLen, false);
    if (flags & MREMAP_FIXED) unmapping(i, newAddr, newLen, false);
  }
  void* p = s_realMap.mremap(old, oldLen, newLen, flags, newAddr);
  // A tracked mapping that moved or grew is tracked again where it is now.
  if (HETOPT_UNLIKELY(tracked) && p != MAP_FAILED)
    mapped(i, p, newLen, MAP_PRIVATE | MAP_ANONYMOUS, __builtin_return_address(0));
  return p;
}

HETOPT_EXPORT int madvise(void* addr, size_t len, int advice) {
  if (HETOPT_UNLIKELY(!resolved())) return static_cast<int>(syscall(SYS_madvise, addr, len, advice));
  if (discardsContents(advice)) {
    if (Interceptor* i = mappingWatcher()) unmapping(i, addr, len, true);
  }
  return s_realMap.madvise(addr, len, advice);
}

// ---- signals ------------------------------------------------------------------------------------

HETOPT_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  int rc;
  if (HETOPT_UNLIKELY(programSigaction(sig, act, old, &rc))) return rc;
  return realSigaction()(sig, act, old);
}

HETOPT_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  // glibc's signal(): BSD semantics, the signal blocked while its handler runs.
  struct sigaction act = {}, old = {};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  int rc;
  if (HETOPT_UNLIKELY(programSigaction(sig, &act, &old, &rc))) return rc == 0 ? old.sa_handler : SIG_ERR;
  using SignalFn = sighandler_t (*)(int, sighandler_t);
  static auto real = reinterpret_cast<SignalFn>(dlsym(RTLD_NEXT, "signal"));
  if (!real) {
    rc = realSigaction()(sig, &act, &old);
    return rc == 0 ? old.sa_handler : SIG_ERR;
  }
  return real(sig, handler);
}

// Between the two states of kSignal (shim/core/state.h).
HETOPT_EXPORT void hetopt_shim_signal_allocations(bool on) {
  unsigned char from = on ? kReady : kSignal;
  s_state.compare_exchange_strong(from, on ? kSignal : kReady, std::memory_order_acq_rel);
}

}  // extern "C"

namespace {

__attribute__((constructor)) void shimConstructor() {
  ensureResolved();
  g_realSigaction = realSigaction();
  bool sizeOk = true, depthOk = true;
  s_minTracked = hetopt::optionUnsigned(hetopt::Option::MIN_TRACKED_SIZE, 1, ~0ull >> 1, &sizeOk);
  s_siteDepth = static_cast<unsigned>(
      hetopt::optionUnsigned(hetopt::Option::SITE_DEPTH, 1, kMaxSiteDepth, &depthOk));
  if (!sizeOk) hetopt::warn("ignoring invalid HETOPT_MIN_TRACKED_SIZE; using %zu", s_minTracked);
  if (!depthOk) hetopt::warn("ignoring invalid HETOPT_SITE_DEPTH (1-16); using %u", s_siteDepth);
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&shimConstructor), &info);
  hetopt_shim_init(info.dli_fname);
}

}  // namespace
