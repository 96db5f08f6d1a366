// SPDX-License-Identifier: MIT
/**
 * @file What the shim's entry point files share among themselves (shim/core never includes it).
 */
#pragma once
#include "api_table.h"
#include "shim/core/below.h"

namespace hetopt::shim {

/// preload.cpp: what lies below the shim, resolved on this call if it was not yet; glibc's own
/// functions while another thread is resolving it (for entry points with no bootstrap buffer to
/// fall back on: signals, the process calls).
const Below& belowNow();

/// opencl_entry.cpp: the real OpenCL function for `id`: the layer's next table once the loader
/// initialized the layer (it reaches programs that dlopen() libOpenCL), else the preload route's.
void* nextOpenCLFunction(api::ApiId id);

}  // namespace hetopt::shim
