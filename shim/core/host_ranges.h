// SPDX-License-Identifier: MIT
/**
 * @file The host memory an intercepted OpenCL call moves through one of its pointer arguments,
 * worked out from the API table's roles (api/opencl_api.txt): plain, rectangular and image
 * transfers, host-pointer buffer creation, SVM copies. Trace mode records it as SSA references;
 * optimize mode counts the bytes and asks whether the memory is pinned. One place, so that both
 * agree on every byte.
 */
#pragma once
#include <cstdint>

#include "api_table.h"
#include "shim/core/interceptor.h"
#include "trace/format.h"

namespace hetopt::shim {

struct HostRange {
  uint64_t ptr = 0;    ///< the first byte touched (the origin applied)
  uint64_t bytes = 0;  ///< bytes moved
  uint64_t span = 0;   ///< from ptr, the extent that holds every byte touched (pitches)
  /// Read (to the device), Write (from it) or Wrap (a CL_MEM_USE_HOST_PTR buffer is made over
  /// it): trace::isTransfer says which of them are transfers.
  trace::HostAccess access = trace::HostAccess::Read;
};

/// The range argument `i` of `call` moves; false when it moves none (not a host-range role:
/// api::isHostRangeRole, a null pointer, a size the call does not give, a buffer made without a
/// host pointer flag). Image element sizes are asked of the driver (clGetImageInfo through
/// g_below->nextFunction) or read from the image format.
bool hostRange(const CallRecord& call, const api::ApiInfo& info, unsigned i, HostRange* out);

}  // namespace hetopt::shim
