// SPDX-License-Identifier: MIT
/**
 * @file register_first_transfer: the naive pinning scheme hetopt must beat, as a preloaded library
 * (lib/libregister_first_transfer.so; scripts/bench/real_programs.sh runs it as the `baseline`
 * variant: LD_PRELOAD=build/lib/libregister_first_transfer.so prog args). Every heap block of
 * 64 KiB or more is registered with the driver at its first host<->device transfer and kept until
 * it goes back: no profile, no characterization, no decision, whatever it costs.
 * REGISTER_FIRST_TRANSFER_STATS=1 prints one line at exit.
 */
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Blocks of kMinBytes or more from malloc, calloc, realloc, posix_memalign, aligned_alloc and
// memalign are remembered. Limits (it is a baseline, kept small): a block is registered in the
// first context it crosses in only; a block whose registration fails stays pageable (counted); at
// most kMaxBlocks blocks are remembered at once (more are counted, not tracked); programs that
// dlopen() libOpenCL are not seen (their calls do not reach these exports).
constexpr size_t kMinBytes = 64 * 1024;
constexpr size_t kMaxBlocks = 16384;

struct Block {
  char* base;
  size_t size;
  cl_mem buffer;     // null until the first transfer registered it
  bool registering;  // a thread is registering it now (no lock held meanwhile)
  bool yielded;      // the program made its own CL_MEM_USE_HOST_PTR buffer over it: never again
};
Block s_blocks[kMaxBlocks];  // sorted by base, guarded by s_lock
size_t s_count = 0;
pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<size_t> s_tracked{0}, s_registered{0}, s_registeredBytes{0}, s_failed{0}, s_yielded{0},
    s_untracked{0};
// Keeps the allocations and frees made inside this library's own OpenCL calls (the driver's) out
// of the table; no OpenCL call is made under the table's lock.
__attribute__((tls_model("initial-exec"))) thread_local int t_inside = 0;

struct Inside {  // this library's own work on this thread
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
};

struct {
  decltype(&::malloc) malloc;
  decltype(&::free) free;
  decltype(&::calloc) calloc;
  decltype(&::realloc) realloc;
  decltype(&::posix_memalign) posix_memalign;
  decltype(&::aligned_alloc) aligned_alloc;
  void* (*memalign)(size_t, size_t);
  size_t (*malloc_usable_size)(void*);
} s_real;
enum : int { kUnresolved, kResolving, kReady };
std::atomic<int> s_state{kUnresolved};

// Bootstrap as in shim/preload.cpp: dlsym() allocates, so until the real allocator is resolved
// requests come from this static buffer, which free() recognises.
alignas(64) char s_boot[128 * 1024];
std::atomic<size_t> s_bootUsed{0};
bool inBoot(const void* p) { return p >= s_boot && p < s_boot + sizeof s_boot; }
void* bootAlloc(size_t n, size_t align = 16) {  // never freed; static storage is zeroed
  align = std::max<size_t>(align, 16);
  uintptr_t at = reinterpret_cast<uintptr_t>(s_boot) + s_bootUsed.fetch_add(n + align);
  at = (at + align - 1) & ~(align - 1);
  if (at + n > reinterpret_cast<uintptr_t>(s_boot + sizeof s_boot)) abort();
  return reinterpret_cast<void*>(at);
}

template <typename F>
void resolve(F& slot, const char* name) {  // a missing symbol is fatal, said without malloc
  slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
  if (slot) return;
  static const char msg[] = "register_first_transfer: a symbol is missing after this library\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  abort();
}
bool ready() {
  if (s_state.load(std::memory_order_acquire) == kReady) return true;
  int expected = kUnresolved;
  if (!s_state.compare_exchange_strong(expected, kResolving)) return s_state.load() == kReady;
  resolve(s_real.malloc, "malloc");
  resolve(s_real.free, "free");
  resolve(s_real.calloc, "calloc");
  resolve(s_real.realloc, "realloc");
  resolve(s_real.posix_memalign, "posix_memalign");
  resolve(s_real.aligned_alloc, "aligned_alloc");
  resolve(s_real.memalign, "memalign");
  resolve(s_real.malloc_usable_size, "malloc_usable_size");
  s_state.store(kReady, std::memory_order_release);
  return true;
}

// OpenCL entry points of the next library (the loader), resolved once at the first transfer (so
// before any buffer exists to release).
struct {
  decltype(&clEnqueueWriteBuffer) write;
  decltype(&clEnqueueReadBuffer) read;
  decltype(&clEnqueueWriteBufferRect) writeRect;
  decltype(&clEnqueueReadBufferRect) readRect;
  decltype(&clGetCommandQueueInfo) queueInfo;
  decltype(&clCreateBuffer) create;
  decltype(&clReleaseMemObject) release;
} s_cl;
pthread_once_t s_clOnce = PTHREAD_ONCE_INIT;
void resolveCl() {
  pthread_once(&s_clOnce, [] {
    Inside in;
    resolve(s_cl.write, "clEnqueueWriteBuffer");
    resolve(s_cl.read, "clEnqueueReadBuffer");
    resolve(s_cl.writeRect, "clEnqueueWriteBufferRect");
    resolve(s_cl.readRect, "clEnqueueReadBufferRect");
    resolve(s_cl.queueInfo, "clGetCommandQueueInfo");
    resolve(s_cl.create, "clCreateBuffer");
    resolve(s_cl.release, "clReleaseMemObject");
  });
}

// First block whose base is above p (under s_lock); the block holding p, if any, is the one before.
size_t upper(const void* p) {
  return std::upper_bound(s_blocks, s_blocks + s_count, static_cast<const char*>(p),
                          [](const char* a, const Block& b) { return a < b.base; }) -
         s_blocks;
}

// A new block of n bytes at p (null: none); returns p.
void* track(void* p, size_t n) {
  if (!p || n < kMinBytes || t_inside) return p;
  pthread_mutex_lock(&s_lock);
  bool full = s_count == kMaxBlocks;
  if (!full) {
    size_t i = upper(p);
    memmove(&s_blocks[i + 1], &s_blocks[i], (s_count - i) * sizeof(Block));
    s_blocks[i] = Block{static_cast<char*>(p), n, nullptr, false, false};
    ++s_count;
  }
  pthread_mutex_unlock(&s_lock);
  ++(full ? s_untracked : s_tracked);
  return p;
}

// Before a block goes back to the allocator: forgets it, releases its buffer. Returns its size
// (0 when it was not tracked).
size_t untrack(void* p) {
  if (s_real.malloc_usable_size(p) < kMinBytes)
    return 0;  // cheap filter: small blocks never tracked
  pthread_mutex_lock(&s_lock);
  size_t i = upper(p);
  if (i == 0 || s_blocks[i - 1].base != p) {
    pthread_mutex_unlock(&s_lock);
    return 0;
  }
  Block b = s_blocks[i - 1];
  memmove(&s_blocks[i - 1], &s_blocks[i], (s_count - i) * sizeof(Block));
  --s_count;
  pthread_mutex_unlock(&s_lock);
  if (b.buffer) {  // before the memory goes back: the driver must not keep it pinned
    Inside in;
    s_cl.release(b.buffer);
  }
  return b.size;
}

// A transfer touches host memory at p: registers the block holding p at its first transfer
// (clEnqueueWriteBuffer, clEnqueueReadBuffer and their Rect variants): a CL_MEM_USE_HOST_PTR
// buffer over the whole block in the context of the transfer's queue, which pins the pages on
// drivers that pin such memory (NVIDIA's); no mlock, no map. The transfer itself is passed on
// unchanged; free() and realloc() release the buffer first (untrack).
void firstTransfer(cl_command_queue queue, const void* p) {
  if (t_inside || s_tracked.load(std::memory_order_relaxed) == 0) return;
  pthread_mutex_lock(&s_lock);
  size_t i = upper(p);
  Block* b = i ? &s_blocks[i - 1] : nullptr;
  if (!b || static_cast<const char*>(p) >= b->base + b->size || b->buffer || b->registering ||
      b->yielded) {
    pthread_mutex_unlock(&s_lock);
    return;
  }
  b->registering = true;
  char* base = b->base;
  size_t size = b->size;
  pthread_mutex_unlock(&s_lock);

  Inside in;
  cl_context context = nullptr;
  cl_int err = s_cl.queueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr);
  cl_mem buffer = err == CL_SUCCESS ? s_cl.create(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                                  size, base, &err)
                                    : nullptr;
  if (err != CL_SUCCESS) buffer = nullptr, ++s_failed;
  pthread_mutex_lock(&s_lock);
  i = upper(base);
  if (i && s_blocks[i - 1].base == base && s_blocks[i - 1].registering) {
    s_blocks[i - 1].registering = false;
    if (!s_blocks[i - 1].yielded) {
      s_blocks[i - 1].buffer = buffer;  // stays null after a failure: never tried again
      if (buffer) ++s_registered, s_registeredBytes += size;
      buffer = nullptr;
    }
  }
  pthread_mutex_unlock(&s_lock);
  if (buffer) s_cl.release(buffer);  // freed or yielded meanwhile, on another thread
}

// The program wraps memory at p in a CL_MEM_USE_HOST_PTR buffer of its own: the block holding it
// is unregistered first and for good (a driver may refuse to register pages twice: CUDA does).
// Only clCreateBuffer's are seen.
void yield(const void* p) {
  pthread_mutex_lock(&s_lock);
  size_t i = upper(p);
  cl_mem taken = nullptr;
  if (i && static_cast<const char*>(p) < s_blocks[i - 1].base + s_blocks[i - 1].size) {
    s_blocks[i - 1].yielded = true;
    std::swap(taken, s_blocks[i - 1].buffer);
  }
  pthread_mutex_unlock(&s_lock);
  if (taken) {
    Inside in;
    s_cl.release(taken);
    ++s_yielded;
  }
}

// The first host byte a Rect transfer touches.
const void* rectStart(const void* p, const size_t* origin, const size_t* region, size_t row,
                      size_t slice) {
  row = row ? row : region[0];
  slice = slice ? slice : region[1] * row;
  return static_cast<const char*>(p) + origin[2] * slice + origin[1] * row + origin[0];
}

__attribute__((constructor)) void init() {
  ready();
  // A fork while another thread holds the table's lock must not leave the child's lock taken.
  pthread_atfork([] { pthread_mutex_lock(&s_lock); }, [] { pthread_mutex_unlock(&s_lock); },
                 [] { pthread_mutex_unlock(&s_lock); });
}

__attribute__((destructor)) void report() {
  if (const char* s = getenv("REGISTER_FIRST_TRANSFER_STATS"); s && *s == '1')
    fprintf(stderr,
            "register_first_transfer: %zu blocks tracked, %zu registered (%.1f MiB), %zu failed, "
            "%zu yielded to the program's own host-pointer buffers, %zu untracked (table full)\n",
            s_tracked.load(), s_registered.load(), s_registeredBytes.load() / 1048576.0,
            s_failed.load(), s_yielded.load(), s_untracked.load());
}

}  // namespace

EXPORT void* malloc(size_t n) { return ready() ? track(s_real.malloc(n), n) : bootAlloc(n); }

EXPORT void free(void* p) {
  if (!p || inBoot(p) || !ready()) return;
  untrack(p);
  s_real.free(p);
}

EXPORT void* calloc(size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) return nullptr;
  return ready() ? track(s_real.calloc(count, size), n) : bootAlloc(n);
}

EXPORT void* realloc(void* p, size_t n) {
  if (inBoot(p)) {
    void* q = malloc(n);
    if (q) memcpy(q, p, std::min<size_t>(n, s_boot + sizeof s_boot - static_cast<char*>(p)));
    return q;
  }
  if (!ready()) return bootAlloc(n);
  size_t old = p ? untrack(p) : 0;
  void* q = s_real.realloc(p, n);
  if (!q && n && old) track(p, old);  // failed: the old block stays, tracked again
  return track(q, n);
}

EXPORT int posix_memalign(void** out, size_t align, size_t n) {
  if (!ready()) return *out = bootAlloc(n, align), 0;
  int rc = s_real.posix_memalign(out, align, n);
  if (rc == 0) track(*out, n);
  return rc;
}

EXPORT void* aligned_alloc(size_t align, size_t n) {
  return ready() ? track(s_real.aligned_alloc(align, n), n) : bootAlloc(n, align);
}

EXPORT void* memalign(size_t align, size_t n) {
  return ready() ? track(s_real.memalign(align, n), n) : bootAlloc(n, align);
}

EXPORT cl_mem clCreateBuffer(cl_context c, cl_mem_flags flags, size_t size, void* p, cl_int* err) {
  resolveCl();
  if ((flags & CL_MEM_USE_HOST_PTR) && p && !t_inside) yield(p);
  return s_cl.create(c, flags, size, p, err);
}

EXPORT cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem b, cl_bool blk, size_t off,
                                   size_t size, const void* p, cl_uint n, const cl_event* w,
                                   cl_event* e) {
  resolveCl();
  firstTransfer(q, p);
  return s_cl.write(q, b, blk, off, size, p, n, w, e);
}

EXPORT cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blk, size_t off,
                                  size_t size, void* p, cl_uint n, const cl_event* w, cl_event* e) {
  resolveCl();
  firstTransfer(q, p);
  return s_cl.read(q, b, blk, off, size, p, n, w, e);
}

EXPORT cl_int clEnqueueWriteBufferRect(cl_command_queue q, cl_mem b, cl_bool blk, const size_t* bo,
                                       const size_t* ho, const size_t* r, size_t brp, size_t bsp,
                                       size_t hrp, size_t hsp, const void* p, cl_uint n,
                                       const cl_event* w, cl_event* e) {
  resolveCl();
  firstTransfer(q, rectStart(p, ho, r, hrp, hsp));
  return s_cl.writeRect(q, b, blk, bo, ho, r, brp, bsp, hrp, hsp, p, n, w, e);
}

EXPORT cl_int clEnqueueReadBufferRect(cl_command_queue q, cl_mem b, cl_bool blk, const size_t* bo,
                                      const size_t* ho, const size_t* r, size_t brp, size_t bsp,
                                      size_t hrp, size_t hsp, void* p, cl_uint n, const cl_event* w,
                                      cl_event* e) {
  resolveCl();
  firstTransfer(q, rectStart(p, ho, r, hrp, hsp));
  return s_cl.readRect(q, b, blk, bo, ho, r, brp, bsp, hrp, hsp, p, n, w, e);
}
