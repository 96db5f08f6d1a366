// SPDX-License-Identifier: MIT
/** @file Host ranges of OpenCL calls; see host_ranges.h.
 * Which host bytes each host-range argument covers, image element sizes included. */
#include "shim/core/host_ranges.h"

#include <CL/cl.h>

#include <algorithm>
#include <cstring>

namespace hetopt::shim {
namespace {

using api::ArgRole;
using trace::HostAccess;

uint64_t imageElementBytes(const cl_image_format* f) {
  if (!f) return 0;
  switch (f->image_channel_data_type) {
    case CL_UNORM_SHORT_565:
    case CL_UNORM_SHORT_555:
      return 2;
    case CL_UNORM_INT_101010:
      return 4;
    default:
      break;
  }
  uint64_t channel = 0;
  switch (f->image_channel_data_type) {
    case CL_SNORM_INT8:
    case CL_UNORM_INT8:
    case CL_SIGNED_INT8:
    case CL_UNSIGNED_INT8:
      channel = 1;
      break;
    case CL_SNORM_INT16:
    case CL_UNORM_INT16:
    case CL_SIGNED_INT16:
    case CL_UNSIGNED_INT16:
    case CL_HALF_FLOAT:
      channel = 2;
      break;
    case CL_SIGNED_INT32:
    case CL_UNSIGNED_INT32:
    case CL_FLOAT:
      channel = 4;
      break;
    default:
      return 0;
  }
  switch (f->image_channel_order) {
    case CL_R:
    case CL_A:
    case CL_INTENSITY:
    case CL_LUMINANCE:
    case CL_DEPTH:
      return channel;
    case CL_RG:
    case CL_RA:
    case CL_Rx:
      return 2 * channel;
    case CL_RGB:
    case CL_RGx:
      return 3 * channel;
    default:
      return 4 * channel;
  }
}

bool sizes3(uint64_t p, uint64_t out[3]) {
  if (!p) return false;
  size_t v[3];
  memcpy(v, reinterpret_cast<const size_t*>(p), sizeof v);
  for (int i = 0; i < 3; ++i) out[i] = v[i];
  return true;
}

}  // namespace

bool hostRange(const CallRecord& call, const api::ApiInfo& info, unsigned i, HostRange* out) {
  if (i >= info.numArgs || i >= call.numArgs || info.args[i].cls != api::ArgClass::Pointer)
    return false;
  const api::ArgInfo& a = info.args[i];
  const uint64_t v = call.args[i];
  if (!v) return false;
  auto arg = [&](int k) -> uint64_t {
    return k >= 0 && static_cast<unsigned>(k) < info.numArgs &&
                   static_cast<unsigned>(k) < call.numArgs
               ? call.args[k]
               : 0;
  };
  *out = HostRange{};
  out->ptr = v;
  switch (a.role) {
    case ArgRole::HostRead:
    case ArgRole::HostWrite:
    case ArgRole::SvmDst:
    case ArgRole::SvmSrc:
      out->bytes = out->span = arg(a.refs[0]);
      out->access = a.role == ArgRole::HostRead || a.role == ArgRole::SvmSrc ? HostAccess::Read
                                                                             : HostAccess::Write;
      return true;
    case ArgRole::HostReadRect:
    case ArgRole::HostWriteRect: {
      uint64_t origin[3] = {}, region[3] = {};
      if (!sizes3(arg(a.refs[0]), origin) || !sizes3(arg(a.refs[1]), region)) return false;
      const uint64_t row = arg(a.refs[2]) ? arg(a.refs[2]) : region[0];
      const uint64_t slice = arg(a.refs[3]) ? arg(a.refs[3]) : row * region[1];
      out->bytes = region[0] * region[1] * region[2];
      out->ptr = v + origin[2] * slice + origin[1] * row + origin[0];
      out->span = out->bytes ? (region[2] - 1) * slice + (region[1] - 1) * row + region[0] : 0;
      out->access = a.role == ArgRole::HostReadRect ? HostAccess::Read : HostAccess::Write;
      return true;
    }
    case ArgRole::HostReadImage:
    case ArgRole::HostWriteImage: {
      uint64_t region[3] = {};
      if (!sizes3(arg(a.refs[1]), region)) return false;
      size_t elem = 0;
      using Fn = cl_int(CL_API_CALL*)(cl_mem, cl_image_info, size_t, void*, size_t*);
      if (auto fn = realClFunction<Fn>(api::ApiId::clGetImageInfo))
        fn(reinterpret_cast<cl_mem>(arg(a.refs[0])), CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem,
           nullptr);
      const uint64_t rowBytes = region[0] * elem;
      const uint64_t row = arg(a.refs[2]) ? arg(a.refs[2]) : rowBytes;
      const uint64_t slice = arg(a.refs[3]) ? arg(a.refs[3]) : row * region[1];
      out->bytes = rowBytes * region[1] * region[2];
      out->span = out->bytes ? (region[2] - 1) * slice + (region[1] - 1) * row + rowBytes : 0;
      out->access = a.role == ArgRole::HostReadImage ? HostAccess::Read : HostAccess::Write;
      return true;
    }
    case ArgRole::HostInit:
    case ArgRole::HostInitImage: {
      const uint64_t flags = arg(a.refs[0]);
      if (!(flags & (CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR))) return false;
      if (a.role == ArgRole::HostInit) {
        out->bytes = arg(a.refs[1]);
      } else {
        const auto* format = reinterpret_cast<const cl_image_format*>(arg(a.refs[1]));
        uint64_t w = 0, h = 1, d = 1;
        if (a.numRefs >= 3 && arg(a.refs[2])) {
          const auto* desc = reinterpret_cast<const cl_image_desc*>(arg(a.refs[2]));
          w = desc->image_width;
          h = std::max<uint64_t>(desc->image_height, 1);
          d = std::max<uint64_t>(desc->image_depth, 1) *
              std::max<uint64_t>(desc->image_array_size, 1);
        } else {
          for (unsigned k = 0; k < info.numArgs; ++k) {
            if (!strcmp(info.args[k].name, "image_width")) w = call.args[k];
            if (!strcmp(info.args[k].name, "image_height")) h = std::max<uint64_t>(call.args[k], 1);
            if (!strcmp(info.args[k].name, "image_depth")) d = std::max<uint64_t>(call.args[k], 1);
          }
        }
        out->bytes = imageElementBytes(format) * w * h * d;
      }
      out->span = out->bytes;
      out->access = (flags & CL_MEM_USE_HOST_PTR) ? HostAccess::Wrap : HostAccess::Read;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace hetopt::shim
