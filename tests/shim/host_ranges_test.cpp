// SPDX-License-Identifier: MIT
/**
 * @file What counts as a host<->device transfer of a call (shim/core/host_ranges.h with
 * trace::isTransfer): the same answer for trace mode's records and optimize mode's counts.
 */
#include "shim/core/host_ranges.h"

#include <CL/cl.h>
#include <gtest/gtest.h>

#include <vector>

using namespace hetopt;
using namespace hetopt::shim;
using trace::HostAccess;

namespace {

/// `id` called with `args`; the range of its host-range argument, if it has one.
bool rangeOf(api::ApiId id, std::vector<uint64_t> args, HostRange* out) {
  const api::ApiInfo& info = api::apiInfo(id);
  args.resize(info.numArgs);
  CallRecord call;
  call.id = id;
  call.numArgs = info.numArgs;
  call.args = args.data();
  for (unsigned i = 0; i < info.numArgs; ++i)
    if (api::isHostRangeRole(info.args[i].role)) return hostRange(call, info, i, out);
  return false;
}

uint64_t u(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

TEST(HostRanges, ACopyHostPtrBufferIsATransferToTheDevice) {
  static char host[4096];
  HostRange r;
  ASSERT_TRUE(rangeOf(api::ApiId::clCreateBuffer,
                      {1, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 4096, u(host), 0}, &r));
  EXPECT_EQ(r.ptr, u(host));
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_EQ(r.access, HostAccess::Read);
  EXPECT_TRUE(trace::isTransfer(r.access));
  // With its properties first, and with CL_MEM_ALLOC_HOST_PTR beside it: the same copy.
  ASSERT_TRUE(rangeOf(api::ApiId::clCreateBufferWithProperties,
                      {1, 0, CL_MEM_COPY_HOST_PTR | CL_MEM_ALLOC_HOST_PTR, 4096, u(host), 0}, &r));
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_TRUE(trace::isTransfer(r.access));
}

TEST(HostRanges, AUseHostPtrBufferWrapsItsMemoryAndMovesNone) {
  static char host[4096];
  HostRange r;
  ASSERT_TRUE(rangeOf(api::ApiId::clCreateBuffer, {1, CL_MEM_USE_HOST_PTR, 4096, u(host), 0}, &r));
  EXPECT_EQ(r.access, HostAccess::Wrap);
  EXPECT_FALSE(trace::isTransfer(r.access));
  // No host pointer flag, or no pointer: no range at all.
  EXPECT_FALSE(rangeOf(api::ApiId::clCreateBuffer, {1, CL_MEM_READ_WRITE, 4096, u(host), 0}, &r));
  EXPECT_FALSE(rangeOf(api::ApiId::clCreateBuffer, {1, CL_MEM_COPY_HOST_PTR, 4096, 0, 0}, &r));
}

TEST(HostRanges, ACopyHostPtrImageMovesEveryElementOfItsSize) {
  static float host[16 * 8 * 4];
  const cl_image_format format{CL_RGBA, CL_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = 16;
  desc.image_height = 8;
  HostRange r;
  ASSERT_TRUE(rangeOf(api::ApiId::clCreateImage,
                      {1, CL_MEM_COPY_HOST_PTR, u(&format), u(&desc), u(host), 0}, &r));
  EXPECT_EQ(r.bytes, sizeof host);
  EXPECT_TRUE(trace::isTransfer(r.access));
  // The OpenCL 1.1 form names width and height as arguments.
  ASSERT_TRUE(rangeOf(api::ApiId::clCreateImage2D,
                      {1, CL_MEM_COPY_HOST_PTR, u(&format), 16, 8, 0, u(host), 0}, &r));
  EXPECT_EQ(r.bytes, sizeof host);
}

TEST(HostRanges, ARectTransferMovesItsRegionWithinTheHostPitches) {
  static char host[64 * 10];
  const size_t bufferOrigin[3] = {0, 0, 0}, hostOrigin[3] = {8, 2, 0}, region[3] = {16, 4, 1};
  HostRange r;
  // queue, buffer, blocking, buffer_origin, host_origin, region, buffer pitches, host pitches, ptr
  ASSERT_TRUE(rangeOf(api::ApiId::clEnqueueWriteBufferRect,
                      {1, 2, 1, u(bufferOrigin), u(hostOrigin), u(region), 0, 0, 64, 0, u(host)},
                      &r));
  EXPECT_EQ(r.ptr, u(host) + 2 * 64 + 8);
  EXPECT_EQ(r.bytes, 16u * 4);
  EXPECT_EQ(r.span, 3u * 64 + 16);
  EXPECT_EQ(r.access, HostAccess::Read);
}

TEST(HostRanges, MapsAndUnmapsAreNoTransfers) {
  // The map's host pointer is its result, the driver's (or a USE_HOST_PTR buffer's) memory: when a
  // driver copies there is not the call's to say.
  EXPECT_EQ(api::apiInfo(api::ApiId::clEnqueueMapBuffer).hostRanges, 0u);
  EXPECT_EQ(api::apiInfo(api::ApiId::clEnqueueUnmapMemObject).hostRanges, 0u);
  EXPECT_FALSE(trace::isTransfer(HostAccess::Mapped));
  EXPECT_FALSE(trace::isTransfer(HostAccess::Unmap));
}
