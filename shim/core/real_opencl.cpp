// SPDX-License-Identifier: MIT
/** @file Finding the loader's OpenCL functions; see real_opencl.h. */
#include "shim/core/real_opencl.h"

#include <dlfcn.h>

#include "shim/core/state.h"

namespace hetopt::shim {

void* realClFunction(const char* name) {
  ScopedInternal internal;
  // This file is linked into libhetopt_shim.so, so RTLD_NEXT starts after the shim.
  if (void* fn = dlsym(RTLD_NEXT, name)) return fn;
  static void* loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  return loader ? dlsym(loader, name) : nullptr;
}

}  // namespace hetopt::shim
