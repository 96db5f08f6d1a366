// SPDX-License-Identifier: MIT
/**
 * @file The real OpenCL entry points for the shim's own OpenCL work (its pinned pool, its
 * profiling queries): never the shim's exported wrappers. The next definition after the shim in
 * link order (the ICD loader), else the loader library opened directly (programs that dlopen()
 * libOpenCL). Calls through them must run inside ScopedInternal so the layer route ignores them.
 */
#pragma once

namespace hetopt::shim {

/// The loader's `name`, or null when no OpenCL loader can be found.
void* realClFunction(const char* name);

template <typename Fn>
Fn realCl(const char* name) {
  return reinterpret_cast<Fn>(realClFunction(name));
}

}  // namespace hetopt::shim
