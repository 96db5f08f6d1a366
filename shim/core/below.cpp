// SPDX-License-Identifier: MIT
/** @file glibc's own functions, what g_below names until the shim's entry points publish theirs.
 * Filled first, before any interceptor runs, so nothing below the shim is looked up twice. */
#include "shim/core/below.h"

#include <malloc.h>

#include <cerrno>

// glibc's allocator and sigaction under their internal names: never the shim's exports, so usable
// wherever shim_core runs.
extern "C" void* __libc_malloc(size_t);
extern "C" void __libc_free(void*);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);
extern "C" void* __libc_valloc(size_t);
extern "C" void* __libc_pvalloc(size_t);
extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*);

namespace hetopt::shim {
namespace {

int libcPosixMemalign(void** out, size_t alignment, size_t size) {
  void* p = __libc_memalign(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
size_t libcUsableSize(void* p) { return malloc_usable_size(p); }
void* libcAlignedAlloc(size_t alignment, size_t size) { return __libc_memalign(alignment, size); }

constexpr Below kLibc{
    {__libc_malloc, __libc_free, __libc_calloc, __libc_realloc, libcPosixMemalign, libcUsableSize,
     libcAlignedAlloc, __libc_memalign, __libc_valloc, __libc_pvalloc},
    {},
    {},
    __sigaction,
    nullptr,
    nullptr};

}  // namespace

const Below* g_below = &kLibc;

}  // namespace hetopt::shim
