// SPDX-License-Identifier: MIT
/**
 * @file The malloc-family and mmap-family entry points of the preloaded shim, the signal entry
 * points, and its constructor. Only entry points and what lies below them (shim/core/below.h,
 * resolved here) live here; what a mode does with an allocation lives behind the Interceptor in
 * shim/core. Hot path (pass-through, or a size the mode does not watch): a load and compare of
 * the resolution state, a relaxed load of the installed interceptor, one indirect call; no lock,
 * no allocation, no syscall. What a mode watches is published once at activation (state.h:
 * g_watch), so no allocation asks the interceptor by virtual call whether it wants to hear of it.
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

#include "common/compiler.h"
#include "common/log.h"
#include "common/options.h"
#include "shim/core/below.h"
#include "shim/core/callsite.h"
#include "shim/core/fatal_signals.h"
#include "shim/core/interceptor.h"
#include "shim/core/state.h"
#include "shim/entry_points.h"

extern "C" void hetopt_shim_init(const char* selfPath);

namespace {

using namespace hetopt::shim;
using hetopt::AllocFn;

/// Everything below the shim, filled by resolveSlow() and then published through g_below.
Below s_below;

/// kSignal: a thread writes the trace from a signal handler (hetopt_shim_signal_allocations):
/// every allocation looks at its thread's t_inSignalSnapshot.
enum : unsigned char { kUnresolved, kResolving, kReady, kSignal };
std::atomic<unsigned char> s_state{kUnresolved};
size_t s_minTracked = 4096;
unsigned s_siteDepth = 4;

// ---- bootstrap buffer --------------------------------------------------------------------------
// dlsym() itself allocates, so until the real functions are known, requests are served from a
// static buffer that free() recognises and ignores (heaptrack's DummyPool). The same buffer is
// the reserve of a thread that writes the trace out from a fatal signal's handler
// (t_inSignalSnapshot): it never enters the allocator the signal may have interrupted.
// Mostly the signal reserve (a trace's snapshot and zstd's workspace); untouched pages cost
// nothing.
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
      if (t_inSignalSnapshot) return nullptr;  // a signal's snapshot gives up, the program goes on
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

// ---- what lies below: resolved once, in one place -----------------------------------------------

template <typename Fn>
Fn* findNext(const char* name) {
  return reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
}

/// A function the shim cannot run without: its absence is fatal, said without malloc.
template <typename Fn>
void require(Fn*& slot, const char* name) {
  slot = findNext<Fn>(name);
  if (!slot) {
    static const char msg[] = "hetopt: cannot find the system allocator (dlsym RTLD_NEXT)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    abort();
  }
}

void fillBelow() {
  SystemAllocator& a = s_below.allocator;
  require(a.malloc, "malloc");
  require(a.free, "free");
  require(a.calloc, "calloc");
  require(a.realloc, "realloc");
  require(a.posixMemalign, "posix_memalign");
  require(a.alignedAlloc, "aligned_alloc");
  require(a.memalign, "memalign");
  require(a.valloc, "valloc");
  require(a.pvalloc, "pvalloc");
  require(a.usableSize, "malloc_usable_size");
  SystemMappings& m = s_below.mappings;
  require(m.mmap, "mmap");
  require(m.munmap, "munmap");
  require(m.mremap, "mremap");
  require(m.madvise, "madvise");
  // The next sigaction: a sanitizer's, else libc's (glibc's own when dlsym finds none).
  s_below.sigaction = findNext<int(int, const struct sigaction*, struct sigaction*)>("sigaction");
  if (!s_below.sigaction) s_below.sigaction = g_below->sigaction;
  s_below.signal = findNext<sighandler_t(int, sighandler_t)>("signal");
  SystemProcess& p = s_below.process;
  p.exit = findNext<void(int)>("_exit");
  p.Exit = findNext<void(int)>("_Exit");
  p.fork = findNext<pid_t()>("fork");
  p.execve = findNext<int(const char*, char* const[], char* const[])>("execve");
  p.execv = findNext<int(const char*, char* const[])>("execv");
  p.execvp = findNext<int(const char*, char* const[])>("execvp");
  p.execvpe = findNext<int(const char*, char* const[], char* const[])>("execvpe");
  s_below.nextFunction = &nextOpenCLFunction;
}

/// The resolution state, as every entry point tests it first: one load and compare.
inline bool ready() { return s_state.load(std::memory_order_acquire) == kReady; }

/// The slow side of that test, out of line: resolves what lies below on the first call (this
/// thread's allocations meanwhile come from the bootstrap buffer), or answers for a thread writing
/// a signal snapshot. False: serve this one from the bootstrap buffer.
HETOPT_NOINLINE HETOPT_COLD bool resolveSlow() {
  const unsigned char st = s_state.load(std::memory_order_acquire);
  if (st == kReady) return true;
  if (st == kSignal) return !t_inSignalSnapshot;
  unsigned char expected = kUnresolved;
  if (!s_state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel))
    return s_state.load(std::memory_order_acquire) == kReady;  // another thread is resolving
  fillBelow();
  g_below = &s_below;
  s_state.store(kReady, std::memory_order_release);
  return true;
}

// ---- hooked paths (an interceptor is installed) -----------------------------------------------

// Tracked: the application's own (not the shim's, not inside an OpenCL call) and large enough.
inline bool tracked(size_t size) {
  return HETOPT_UNLIKELY(interceptActive()) && size >= s_minTracked && t_depth == 0;
}

/// The application's call site (this thread's depth raised), or null for the driver's own memory
/// or the runtime's (no frame outside libc/libstdc++/ld.so, e.g. libstdc++'s exception pool).
const CallSite* applicationSite(CallSite* site) {
  captureCallSite(site, s_siteDepth);
  return site->fromDriver || site->depth == 0 ? nullptr : site;
}

HETOPT_NOINLINE void recordAllocation(AllocFn fn, void* ptr, size_t size, size_t alignment,
                                      void* oldPtr) {
  ScopedInternal internal;
  Interceptor* i = interceptor();
  if (!i) return;
  CallSite site;
  const CallSite* sitePtr = nullptr;
  if (size >= s_minTracked) {
    sitePtr = applicationSite(&site);
    if (!sitePtr && fn != AllocFn::Realloc) return;
  }
  i->allocated(AllocEvent{fn, ptr, size, alignment, oldPtr, sitePtr});
}

/// A completed application allocation, for a mode that watches them.
inline void noteAllocation(AllocFn fn, void* ptr, size_t size, size_t alignment, void* oldPtr) {
  if (g_watch.allocations.load(std::memory_order_relaxed))
    recordAllocation(fn, ptr, size, alignment, oldPtr);
}

HETOPT_NOINLINE void recordFree(void* ptr) {
  ScopedInternal internal;
  if (Interceptor* i = interceptor()) i->freeing(ptr);
}

inline void noteFree(void* ptr) {
  if (g_watch.allocations.load(std::memory_order_relaxed)) recordFree(ptr);
}

HETOPT_NOINLINE void* serveAt(AllocFn fn, size_t size, size_t alignment) {
  Interceptor* i = interceptor();
  if (!i) return nullptr;
  ScopedInternal internal;
  CallSite site;
  const CallSite* where = applicationSite(&site);
  return where ? i->serve(fn, size, alignment, *where) : nullptr;
}

/// Optimize mode: memory for a tracked application allocation from the interceptor, or null.
inline void* serveAllocation(AllocFn fn, size_t size, size_t alignment) {
  if (HETOPT_LIKELY(!g_watch.servesSize(size))) return nullptr;
  return serveAt(fn, size, alignment);
}

/// The interceptor that handed out `ptr`, or null (system memory): asked by every free() while a
/// mode that serves memory is installed; the others never own a block.
inline Interceptor* servingOwner(const void* ptr) {
  if (HETOPT_LIKELY(!g_watch.serves())) return nullptr;
  Interceptor* i = interceptor();
  return (i && i->owns(ptr)) ? i : nullptr;
}

// The interceptor when it watches mappings (optimize mode with registrations), else null.
inline Interceptor* mappingWatcher() {
  if (HETOPT_LIKELY(!interceptActive())) return nullptr;
  if (!g_watch.mappings.load(std::memory_order_relaxed)) return nullptr;
  return interceptor();
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

// ---- realloc's slow paths ----------------------------------------------------------------------

/// realloc of a bootstrap block: into a real one (or another bootstrap block).
HETOPT_NOINLINE HETOPT_COLD void* reallocBootstrapBlock(void* ptr, size_t size) {
  void* p = malloc(size);
  if (p) memcpy(p, ptr, std::min(size, bootstrapSize(ptr)));
  return p;
}

/// realloc before resolution (or in a signal snapshot): into the bootstrap buffer. A system block
/// (only in a signal handler's snapshot: bootstrap knows no other) is copied.
HETOPT_NOINLINE HETOPT_COLD void* reallocIntoBootstrap(void* ptr, size_t size) {
  void* p = bootstrapAlloc(size);
  if (p && ptr) memcpy(p, ptr, std::min(size, s_below.allocator.usableSize(ptr)));
  return p;
}

/// realloc while an interceptor is installed. Where a block goes when serving is at stake (a
/// block the mode handed out, or an application block growing at a site it serves) is the
/// interceptor's decision (Interceptor::reallocate); the rest is the system's realloc, reported.
HETOPT_NOINLINE void* reallocIntercepted(void* ptr, size_t size) {
  Interceptor* i = interceptor();
  if (i && g_watch.serves()) {
    const bool owned = ptr && i->owns(ptr);
    if (owned || (t_depth == 0 && size >= s_minTracked && g_watch.servesSize(size))) {
      ScopedInternal internal;
      CallSite site;
      const CallSite* where = owned ? nullptr : applicationSite(&site);
      void* result = nullptr;
      if ((owned || where) && i->reallocate(ptr, size, where, &result)) return result;
    }
  }
  if (t_depth != 0) return s_below.allocator.realloc(ptr, size);
  if (ptr && size == 0) {  // glibc frees the block and returns null
    noteFree(ptr);
    return s_below.allocator.realloc(ptr, 0);
  }
  void* p = s_below.allocator.realloc(ptr, size);
  // Every application realloc is reported (a tracked block may shrink below the tracked size).
  if (p) noteAllocation(AllocFn::Realloc, p, size, 0, ptr);
  return p;
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

namespace hetopt::shim {

const Below& belowNow() { return ready() || resolveSlow() ? s_below : *g_below; }

}  // namespace hetopt::shim

// ---- exported entry points ---------------------------------------------------------------------

extern "C" {

HETOPT_EXPORT void* malloc(size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) return bootstrapAlloc(size);
  if (tracked(size)) {
    if (void* served = serveAllocation(AllocFn::Malloc, size, 0)) return served;
  }
  void* p = s_below.allocator.malloc(size);
  if (tracked(size) && p) noteAllocation(AllocFn::Malloc, p, size, 0, nullptr);
  return p;
}

HETOPT_EXPORT void free(void* ptr) {
  if (HETOPT_UNLIKELY(ptr == nullptr || inBootstrap(ptr))) return;
  if (HETOPT_UNLIKELY(interceptActive())) {
    if (Interceptor* owner = servingOwner(ptr)) {
      ScopedInternal internal;
      owner->release(ptr);
      return;
    }
    // Recorded before the real free: no other thread can reuse the address in between.
    if (t_depth == 0)
      noteFree(ptr);
    else if (HETOPT_UNLIKELY(t_inSignalSnapshot))
      return;  // a signal handler's snapshot: the allocator may be the code it interrupted
  }
  s_below.allocator.free(ptr);
}

HETOPT_EXPORT void* calloc(size_t count, size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) return nullptr;
    return bootstrapAlloc(bytes);
  }
  size_t bytes;
  if (tracked(count) && !__builtin_mul_overflow(count, size, &bytes) && tracked(bytes)) {
    if (void* served = serveAllocation(AllocFn::Calloc, bytes, 0)) return served;
  }
  void* p = s_below.allocator.calloc(count, size);
  bytes = count * size;  // no overflow: calloc succeeded
  if (p && tracked(bytes)) noteAllocation(AllocFn::Calloc, p, bytes, 0, nullptr);
  return p;
}

HETOPT_EXPORT void* realloc(void* ptr, size_t size) {
  if (HETOPT_UNLIKELY(inBootstrap(ptr))) return reallocBootstrapBlock(ptr, size);
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) return reallocIntoBootstrap(ptr, size);
  if (HETOPT_UNLIKELY(interceptActive())) return reallocIntercepted(ptr, size);
  return s_below.allocator.realloc(ptr, size);
}

HETOPT_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) {
    *out = bootstrapAlloc(size, alignment);
    return *out ? 0 : ENOMEM;
  }
  if (tracked(size) && alignment && !(alignment & (alignment - 1)) &&
      alignment % sizeof(void*) == 0) {
    if (void* served = serveAllocation(AllocFn::PosixMemalign, size, alignment)) {
      *out = served;
      return 0;
    }
  }
  int rc = s_below.allocator.posixMemalign(out, alignment, size);
  if (rc == 0 && tracked(size))
    noteAllocation(AllocFn::PosixMemalign, *out, size, alignment, nullptr);
  return rc;
}

HETOPT_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) return bootstrapAlloc(size, alignment);
  if (tracked(size) && alignment && !(alignment & (alignment - 1))) {
    if (void* served = serveAllocation(AllocFn::AlignedAlloc, size, alignment)) return served;
  }
  void* p = s_below.allocator.alignedAlloc(alignment, size);
  if (p && tracked(size)) noteAllocation(AllocFn::AlignedAlloc, p, size, alignment, nullptr);
  return p;
}

HETOPT_EXPORT void* memalign(size_t alignment, size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) return bootstrapAlloc(size, alignment);
  if (tracked(size) && alignment && !(alignment & (alignment - 1))) {
    if (void* served = serveAllocation(AllocFn::Memalign, size, alignment)) return served;
  }
  void* p = s_below.allocator.memalign(alignment, size);
  if (p && tracked(size)) noteAllocation(AllocFn::Memalign, p, size, alignment, nullptr);
  return p;
}

HETOPT_EXPORT void* valloc(size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) return bootstrapAlloc(size, 4096);
  if (tracked(size)) {
    if (void* served = serveAllocation(AllocFn::Valloc, size, 4096)) return served;
  }
  void* p = s_below.allocator.valloc(size);
  if (p && tracked(size)) noteAllocation(AllocFn::Valloc, p, size, 4096, nullptr);
  return p;
}

HETOPT_EXPORT void* pvalloc(size_t size) {
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow())
    return bootstrapAlloc((size + 4095) & ~size_t{4095}, 4096);
  void* p = s_below.allocator.pvalloc(size);
  if (p && tracked(size)) noteAllocation(AllocFn::Pvalloc, p, size, 4096, nullptr);
  return p;
}

HETOPT_EXPORT size_t malloc_usable_size(void* ptr) {
  if (ptr == nullptr) return 0;
  if (inBootstrap(ptr)) return bootstrapSize(ptr);
  if (HETOPT_UNLIKELY(!ready()) && !resolveSlow()) return 0;
  if (HETOPT_UNLIKELY(interceptActive())) {
    if (Interceptor* owner = servingOwner(ptr)) return owner->usableSize(ptr);
  }
  return s_below.allocator.usableSize(ptr);
}

HETOPT_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (HETOPT_UNLIKELY(!ready()))
    return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
  Interceptor* i = mappingWatcher();
  if (HETOPT_UNLIKELY(i != nullptr) && (flags & MAP_FIXED)) unmapping(i, addr, len, false);
  void* p = s_below.mappings.mmap(addr, len, prot, flags, fd, offset);
  if (HETOPT_UNLIKELY(i != nullptr) && p != MAP_FAILED)
    mapped(i, p, len, flags, __builtin_return_address(0));
  return p;
}

HETOPT_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, len, prot, flags, fd, offset);
}

HETOPT_EXPORT int munmap(void* addr, size_t len) {
  if (HETOPT_UNLIKELY(!ready())) return static_cast<int>(syscall(SYS_munmap, addr, len));
  if (Interceptor* i = mappingWatcher()) unmapping(i, addr, len, false);
  return s_below.mappings.munmap(addr, len);
}

HETOPT_EXPORT void* mremap(void* old, size_t oldLen, size_t newLen, int flags, ...) {
  void* newAddr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    newAddr = va_arg(ap, void*);
    va_end(ap);
  }
  if (HETOPT_UNLIKELY(!ready()))
    return reinterpret_cast<void*>(syscall(SYS_mremap, old, oldLen, newLen, flags, newAddr));
  Interceptor* i = mappingWatcher();
  bool tracked = false;
  if (HETOPT_UNLIKELY(i != nullptr)) {
    tracked = unmapping(i, old, oldLen, false);
    if (flags & MREMAP_FIXED) unmapping(i, newAddr, newLen, false);
  }
  void* p = s_below.mappings.mremap(old, oldLen, newLen, flags, newAddr);
  // A tracked mapping that moved or grew is tracked again where it is now.
  if (HETOPT_UNLIKELY(tracked) && p != MAP_FAILED)
    mapped(i, p, newLen, MAP_PRIVATE | MAP_ANONYMOUS, __builtin_return_address(0));
  return p;
}

HETOPT_EXPORT int madvise(void* addr, size_t len, int advice) {
  if (HETOPT_UNLIKELY(!ready())) return static_cast<int>(syscall(SYS_madvise, addr, len, advice));
  if (discardsContents(advice)) {
    if (Interceptor* i = mappingWatcher()) unmapping(i, addr, len, true);
  }
  return s_below.mappings.madvise(addr, len, advice);
}

// ---- signals ------------------------------------------------------------------------------------
// sigaction() and signal() for the signals trace mode watches go to shim/core/fatal_signals,
// which keeps them as the program's actions.

HETOPT_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  int rc;
  if (HETOPT_UNLIKELY(programSigaction(sig, act, old, &rc))) return rc;
  return belowNow().sigaction(sig, act, old);
}

HETOPT_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  // glibc's signal(): BSD semantics, the signal blocked while its handler runs.
  struct sigaction act = {}, old = {};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  int rc;
  if (HETOPT_UNLIKELY(programSigaction(sig, &act, &old, &rc)))
    return rc == 0 ? old.sa_handler : SIG_ERR;
  const Below& below = belowNow();
  if (!below.signal) {
    rc = below.sigaction(sig, &act, &old);
    return rc == 0 ? old.sa_handler : SIG_ERR;
  }
  return below.signal(sig, handler);
}

// Between the two states of kSignal (shim/core/state.h: t_inSignalSnapshot).
HETOPT_EXPORT void hetopt_shim_signal_allocations(bool on) {
  unsigned char from = on ? kReady : kSignal;
  s_state.compare_exchange_strong(from, on ? kSignal : kReady, std::memory_order_acq_rel);
}

}  // extern "C"

namespace {

__attribute__((constructor)) void shimConstructor() {
  if (!ready()) resolveSlow();  // what lies below first, before any mode exists
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
