// SPDX-License-Identifier: MIT
/** @file The generated API table says what the design needs about the calls that move data. */
#include "api_table.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace hetopt::api;

namespace {
int argIndex(const ApiInfo& info, const char* name) {
  for (int i = 0; i < info.numArgs; ++i)
    if (!strcmp(info.args[i].name, name)) return i;
  return -1;
}
}  // namespace

TEST(ApiTable, NamesRoundTrip) {
  for (size_t i = 0; i < kApiCount; ++i) {
    ApiId id;
    ASSERT_TRUE(apiIdByName(apiInfo(static_cast<ApiId>(i)).name, &id));
    EXPECT_EQ(static_cast<size_t>(id), i);
  }
  ApiId id;
  EXPECT_FALSE(apiIdByName("clNotAFunction", &id));
}

TEST(ApiTable, CoversTheOpenCL30CoreAndMemoryExtensions) {
  size_t core = 0, ext = 0;
  for (size_t i = 0; i < kApiCount; ++i) (apiInfo(static_cast<ApiId>(i)).extension ? ext : core)++;
  EXPECT_GE(core, 110u);  // every entry point of CL/cl.h 3.0
  ApiId id;
  for (const char* e :
       {"clSVMAllocARM", "clEnqueueSVMMemcpyARM", "clHostMemAllocINTEL", "clEnqueueMemcpyINTEL",
        "clCreateCommandQueueWithPropertiesKHR", "clEnqueueMigrateMemObjectEXT"}) {
    ASSERT_TRUE(apiIdByName(e, &id)) << e;
    EXPECT_TRUE(apiInfo(id).extension) << e;
  }
  EXPECT_GT(ext, 20u);
}

TEST(ApiTable, WriteBufferRolesNameHostSegmentAndSize) {
  const ApiInfo& w = apiInfo(ApiId::clEnqueueWriteBuffer);
  EXPECT_EQ(w.kind, ApiKind::H2d);
  int ptr = argIndex(w, "ptr");
  ASSERT_GE(ptr, 0);
  EXPECT_EQ(w.args[ptr].role, ArgRole::HostRead);
  ASSERT_EQ(w.args[ptr].numRefs, 1);
  EXPECT_EQ(w.args[ptr].refs[0], argIndex(w, "size"));
  EXPECT_EQ(w.args[argIndex(w, "buffer")].role, ArgRole::Writes);
  EXPECT_EQ(w.args[argIndex(w, "buffer")].cls, ArgClass::Mem);
  EXPECT_EQ(w.args[argIndex(w, "event")].role, ArgRole::EventOut);
  EXPECT_EQ(w.args[argIndex(w, "event_wait_list")].role, ArgRole::Wait);

  const ApiInfo& r = apiInfo(ApiId::clEnqueueReadBufferRect);
  EXPECT_EQ(r.kind, ApiKind::D2h);
  EXPECT_EQ(r.args[argIndex(r, "ptr")].role, ArgRole::HostWriteRect);
  EXPECT_EQ(r.args[argIndex(r, "ptr")].numRefs, 4);
}

TEST(ApiTable, CreatorsAndMapsDescribeTheirResults) {
  const ApiInfo& cb = apiInfo(ApiId::clCreateBuffer);
  EXPECT_EQ(cb.returnRole, ReturnRole::New);
  EXPECT_EQ(cb.returnClass, ArgClass::Mem);
  EXPECT_EQ(cb.args[argIndex(cb, "host_ptr")].role, ArgRole::HostInit);
  EXPECT_EQ(cb.args[argIndex(cb, "errcode_ret")].role, ArgRole::Errcode);
  const ApiInfo& map = apiInfo(ApiId::clEnqueueMapBuffer);
  EXPECT_EQ(map.returnRole, ReturnRole::Mapped);
  EXPECT_EQ(map.returnClass, ArgClass::Pointer);
  EXPECT_EQ(apiInfo(ApiId::clEnqueueNDRangeKernel).kind, ApiKind::Launch);
  EXPECT_EQ(apiInfo(ApiId::clSetKernelArg).args[0].role, ArgRole::Writes);
}

TEST(ApiTable, CallShapeComesFromTheTable) {
  const ApiInfo& r = apiInfo(ApiId::clEnqueueReadBuffer);
  EXPECT_EQ(r.eventArg, argIndex(r, "event"));
  EXPECT_EQ(r.waitArg, argIndex(r, "event_wait_list"));
  EXPECT_EQ(r.blockingArg, argIndex(r, "blocking_read"));
  EXPECT_EQ(r.args[r.blockingArg].role, ArgRole::Blocking);
  const ApiInfo& m = apiInfo(ApiId::clEnqueueMemcpyINTEL);
  EXPECT_EQ(m.blockingArg, argIndex(m, "blocking"));
  const ApiInfo& k = apiInfo(ApiId::clEnqueueNDRangeKernel);
  EXPECT_EQ(k.blockingArg, -1);
  EXPECT_EQ(apiInfo(ApiId::clFinish).eventArg, -1);
}

TEST(ApiTable, HandleArraysNameTheirKindAndFilledCount) {
  const ApiInfo& d = apiInfo(ApiId::clGetDeviceIDs);
  const int devices = argIndex(d, "devices");
  EXPECT_EQ(d.args[devices].role, ArgRole::OutHandles);
  EXPECT_EQ(d.args[devices].elem, ArgClass::Device);
  ASSERT_EQ(d.args[devices].numRefs, 2);
  EXPECT_EQ(d.args[devices].refs[1], argIndex(d, "num_devices"));
  const ApiInfo& m = apiInfo(ApiId::clEnqueueMigrateMemObjects);
  EXPECT_EQ(m.args[argIndex(m, "mem_objects")].elem, ArgClass::Mem);
  EXPECT_EQ(m.args[argIndex(m, "event_wait_list")].elem, ArgClass::Event);
  const ApiInfo& p = apiInfo(ApiId::clGetPlatformIDs);
  EXPECT_EQ(p.args[argIndex(p, "platforms")].elem, ArgClass::Platform);
  EXPECT_EQ(p.args[argIndex(p, "num_entries")].elem, ArgClass::Scalar);
}

TEST(ApiTable, TwinnableCommandsAreTheTimedDeviceCommands) {
  size_t twinnable = 0;
  for (size_t i = 0; i < kApiCount; ++i) {
    const ApiInfo& info = apiInfo(static_cast<ApiId>(i));
    if (!info.twinnable) continue;
    ++twinnable;
    EXPECT_GE(info.eventArg, 0) << info.name;
    EXPECT_GE(info.waitArg, 0) << info.name;
    EXPECT_EQ(info.args[0].cls, ArgClass::Queue) << info.name;
  }
  EXPECT_EQ(twinnable, 18u);
  EXPECT_TRUE(apiInfo(ApiId::clEnqueueWriteBuffer).twinnable);
  EXPECT_TRUE(apiInfo(ApiId::clEnqueueUnmapMemObject).twinnable);
  EXPECT_FALSE(apiInfo(ApiId::clEnqueueMarkerWithWaitList).twinnable);
  EXPECT_FALSE(apiInfo(ApiId::clEnqueueMigrateMemObjects).twinnable);
  EXPECT_FALSE(apiInfo(ApiId::clEnqueueSVMMemcpy).twinnable);
}

TEST(ApiTable, CallsThatMoveHostMemoryAreThoseWithHostRangeRoles) {
  for (size_t i = 0; i < kApiCount; ++i) {
    const ApiInfo& info = apiInfo(static_cast<ApiId>(i));
    unsigned ranges = 0;
    for (unsigned a = 0; a < info.numArgs; ++a) ranges += isHostRangeRole(info.args[a].role);
    EXPECT_EQ(info.hostRanges, ranges) << info.name;
    EXPECT_LE(info.hostRanges, kMaxHostRanges) << info.name;
  }
  EXPECT_EQ(apiInfo(ApiId::clEnqueueWriteBufferRect).hostRanges, 1u);
  EXPECT_EQ(apiInfo(ApiId::clCreateBuffer).hostRanges, 1u);  // CL_MEM_COPY_HOST_PTR / USE_HOST_PTR
  EXPECT_EQ(apiInfo(ApiId::clCreateImage2D).hostRanges, 1u);
  EXPECT_EQ(apiInfo(ApiId::clEnqueueSVMMemcpy).hostRanges, 2u);
  EXPECT_EQ(kMaxHostRanges, 2u);
  // A map returns memory; a launch and a fill move none the program names.
  EXPECT_EQ(apiInfo(ApiId::clEnqueueMapBuffer).hostRanges, 0u);
  EXPECT_EQ(apiInfo(ApiId::clEnqueueNDRangeKernel).hostRanges, 0u);
  EXPECT_EQ(apiInfo(ApiId::clEnqueueFillBuffer).hostRanges, 0u);
}
