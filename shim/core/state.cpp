// SPDX-License-Identifier: MIT
/** @file The shim's shared state; see state.h. */
#include "shim/core/state.h"

#include <malloc.h>

#include <cerrno>

#include "shim/core/interceptor.h"

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

}  // namespace hetopt::shim
