// SPDX-License-Identifier: MIT
/**
 * @file The call model without a driver: synthetic calls, as the shim's entry points hand them
 * over, become leaves whose references name the right objects and SSA versions.
 */
#include "trace/call_model.h"

#include <CL/cl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "synthetic.h"

namespace hetopt::trace {
namespace {

using api::ApiId;
using testing::Synth;
using testing::tempPath;

/// The host memory of a plain transfer: args[5] (ptr), args[4] bytes, read for writes.
bool plainHostSpan(const CallView& call, unsigned arg, HostSpan* out) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  const api::ArgRole role = info.args[arg].role;
  if (role != api::ArgRole::HostRead && role != api::ArgRole::HostWrite &&
      role != api::ArgRole::HostInit)
    return false;
  out->ptr = call.args[arg];
  out->bytes = out->span = call.args[info.args[arg].refs[role == api::ArgRole::HostInit ? 1 : 0]];
  out->access = role == api::ArgRole::HostRead    ? HostAccess::Read
                : role == api::ArgRole::HostWrite ? HostAccess::Write
                                                  : HostAccess::Wrap;
  return true;
}

bool deviceName(ObjectKind kind, uint64_t handle, char* out, size_t size) {
  if (kind != ObjectKind::Device) return false;
  snprintf(out, size, "dev-%llx", static_cast<unsigned long long>(handle));
  return true;
}

class CallModelTest : public ::testing::Test {
 protected:
  CallModelTest()
      : synth(tempPath("call-model.trace")), model(CallModelHooks{plainHostSpan, deviceName}) {}
  ~CallModelTest() override { remove(tempPath("call-model.trace").c_str()); }

  /// Builds the leaf of `id` with `args` (the table's order) and `result`.
  Leaf build(ApiId id, std::vector<uint64_t> args, uint64_t result = CL_SUCCESS) {
    args.resize(api::apiInfo(id).numArgs);
    const CallView view{id, args.data(), result};
    Leaf leaf;
    model.build(synth.recorder(), view, CallModel::outcome(view), 1234, leaf);
    return leaf;
  }
  ObjectTable& objects() { return synth.recorder().objects(); }

  Synth synth;
  CallModel model;
};

TEST(RefFactory, WritesAndCreationsDefineTheNextVersion) {
  ObjectTable objects;
  const ObjectId a = objects.create(ObjectKind::Mem);
  EXPECT_EQ(makeRef(objects, a, 0, kRefCreate).vFirst, 1u);
  EXPECT_EQ(makeRef(objects, a, 1, kRefRead).vFirst, 1u);
  const Ref w = makeRef(objects, a, 2, kRefWrite);
  EXPECT_EQ(w.vFirst, 2u);
  EXPECT_EQ(w.vLast, 2u);
  EXPECT_EQ(w.arg, 2);
  EXPECT_EQ(w.flags, kRefWrite);
  EXPECT_EQ(makeRef(objects, a, 0, kRefDestroy).vFirst, 2u);
  EXPECT_EQ(objects.version(a), 2u);
}

TEST(RefFactory, HostReferencesCarryTheirRangeAndVersionByDirection) {
  ObjectTable objects;
  const ObjectId seg = objects.create(ObjectKind::Segment);
  const HostTarget t{seg, 64};
  const Ref read = makeHostRef(objects, t, 5, HostAccess::Read, 100, 128);
  EXPECT_EQ(read.flags, kRefHost | kRefRead);
  EXPECT_EQ(read.vFirst, 0u);
  EXPECT_EQ(read.offMin, 64u);
  EXPECT_EQ(read.endMax, 192u);
  EXPECT_EQ(read.bytes, 100u);
  EXPECT_EQ(makeHostRef(objects, t, 5, HostAccess::Write, 8, 8).vFirst, 1u);
  EXPECT_EQ(makeHostRef(objects, t, kRefArgReturn, HostAccess::Mapped, 8, 8).vFirst, 2u);
  const Ref unmap = makeHostRef(objects, t, 1, HostAccess::Unmap, 0, 1);
  EXPECT_EQ(unmap.flags, kRefHost | kRefRead);
  EXPECT_EQ(unmap.access, HostAccess::Unmap);
  EXPECT_EQ(unmap.vFirst, 2u);
  EXPECT_EQ(makeHostRef(objects, t, 3, HostAccess::Wrap, 8, 8).vFirst, 2u);
}

TEST(CallModelOutcome, StatusFromReturnErrcodeOrHandle) {
  uint64_t args[9] = {};
  EXPECT_TRUE(CallModel::outcome({ApiId::clEnqueueWriteBuffer, args, CL_SUCCESS}).ok);
  const CallOutcome failed = CallModel::outcome(
      {ApiId::clEnqueueWriteBuffer, args, static_cast<uint32_t>(CL_INVALID_VALUE)});
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.status, CL_INVALID_VALUE);
  cl_int err = CL_OUT_OF_RESOURCES;
  uint64_t create[5] = {0x10, 0, 64, 0, reinterpret_cast<uint64_t>(&err)};
  const CallOutcome viaErrcode = CallModel::outcome({ApiId::clCreateBuffer, create, 0});
  EXPECT_FALSE(viaErrcode.ok);
  EXPECT_EQ(viaErrcode.status, CL_OUT_OF_RESOURCES);
  create[4] = 0;
  EXPECT_TRUE(CallModel::outcome({ApiId::clCreateBuffer, create, 0x20}).ok);
  EXPECT_EQ(CallModel::outcome({ApiId::clCreateBuffer, create, 0}).status, CL_INVALID_VALUE);
}

TEST_F(CallModelTest, WriteBufferReadsHostMemoryAndWritesTheBuffer) {
  ASSERT_TRUE(synth.ok());
  const ObjectId seg = synth.malloc(0x10000, 4096);
  const ObjectId mem = synth.recorder().createHandle(ObjectKind::Mem, 0x2000);
  const Leaf leaf =
      build(ApiId::clEnqueueWriteBuffer, {0x1000, 0x2000, CL_TRUE, 0, 1024, 0x10100, 0, 0, 0});
  EXPECT_EQ(leaf.code, static_cast<uint16_t>(ApiId::clEnqueueWriteBuffer));
  EXPECT_EQ(leaf.host.total, 1234u);
  ASSERT_EQ(leaf.args.size(), 9u);
  EXPECT_EQ(leaf.args[4].first, 1024u);  // a scalar as passed
  EXPECT_EQ(leaf.args[5].first, 1u);     // a pointer as present or not
  ASSERT_EQ(leaf.refs.size(), 3u);
  EXPECT_EQ(objects().kind(leaf.refs[0].obj), ObjectKind::Queue);  // first seen: created, read
  EXPECT_EQ(leaf.refs[0].flags, kRefRead);
  EXPECT_EQ(leaf.refs[1].obj, mem);
  EXPECT_EQ(leaf.refs[1].flags, kRefWrite);
  EXPECT_EQ(leaf.refs[1].vFirst, 1u);  // its first write defines version 1
  EXPECT_EQ(leaf.refs[2].obj, seg);
  EXPECT_EQ(leaf.refs[2].flags, kRefHost | kRefRead);
  EXPECT_EQ(leaf.refs[2].offMin, 0x100u);
  EXPECT_EQ(leaf.refs[2].bytes, 1024u);

  // A failed transfer names the same objects but writes nothing and moves no bytes.
  const Leaf failed =
      build(ApiId::clEnqueueWriteBuffer, {0x1000, 0x2000, CL_TRUE, 0, 1024, 0x10100, 0, 0, 0},
            static_cast<uint32_t>(CL_INVALID_VALUE));
  ASSERT_EQ(failed.refs.size(), 3u);
  EXPECT_EQ(failed.refs[1].flags, kRefRead);
  EXPECT_EQ(failed.refs[1].vFirst, 1u);
  EXPECT_EQ(failed.refs[2].bytes, 0u);
}

TEST_F(CallModelTest, WithoutAHostHookNoHostReferenceIsMade) {
  CallModel bare;
  synth.malloc(0x10000, 4096);
  uint64_t args[9] = {0x1000, 0x2000, CL_TRUE, 0, 1024, 0x10100, 0, 0, 0};
  const CallView view{ApiId::clEnqueueWriteBuffer, args, CL_SUCCESS};
  Leaf leaf;
  bare.build(synth.recorder(), view, CallModel::outcome(view), 1, leaf);
  ASSERT_EQ(leaf.refs.size(), 2u);
  for (const Ref& r : leaf.refs) EXPECT_FALSE(r.flags & kRefHost);
}

TEST_F(CallModelTest, LaunchWritesTheBuffersBoundToTheKernel) {
  const ObjectId kernel = synth.recorder().createHandle(ObjectKind::Kernel, 0x3000);
  const ObjectId a = synth.recorder().createHandle(ObjectKind::Mem, 0x2000);
  const ObjectId b = synth.recorder().createHandle(ObjectKind::Mem, 0x2100);
  const uint64_t ha = 0x2000, hb = 0x2100;
  build(ApiId::clSetKernelArg, {0x3000, 0, sizeof(cl_mem), reinterpret_cast<uint64_t>(&ha)});
  build(ApiId::clSetKernelArg, {0x3000, 2, sizeof(cl_mem), reinterpret_cast<uint64_t>(&hb)});
  const Leaf launch = build(ApiId::clEnqueueNDRangeKernel, {0x1000, 0x3000, 1, 0, 0, 0, 0, 0, 0});
  std::vector<ObjectId> written;
  for (const Ref& r : launch.refs) {
    if (r.obj == kernel) EXPECT_EQ(r.flags, kRefRead);
    if (r.arg == kRefArgBound) {
      EXPECT_EQ(r.flags, kRefWrite);
      written.push_back(r.obj);
    }
  }
  EXPECT_EQ(written, (std::vector<ObjectId>{a, b}));
  // Rebinding argument 0 to nothing (a scalar): only b is written after.
  const uint64_t scalar = 7;
  build(ApiId::clSetKernelArg, {0x3000, 0, 4, reinterpret_cast<uint64_t>(&scalar)});
  written.clear();
  for (const Ref& r : build(ApiId::clEnqueueNDRangeKernel, {0x1000, 0x3000, 1}).refs)
    if (r.arg == kRefArgBound) written.push_back(r.obj);
  EXPECT_EQ(written, (std::vector<ObjectId>{b}));
}

TEST_F(CallModelTest, OutHandlesStopAtTheCountTheDriverFilledAndAreLabelled) {
  uint64_t devices[4] = {0xd0, 0xd1, 0, 0};
  cl_uint filled = 2;
  const Leaf leaf = build(ApiId::clGetDeviceIDs,
                          {0xa0, CL_DEVICE_TYPE_ALL, 4, reinterpret_cast<uint64_t>(devices),
                           reinterpret_cast<uint64_t>(&filled)});
  std::vector<Ref> deviceRefs;
  for (const Ref& r : leaf.refs)
    if (objects().kind(r.obj) == ObjectKind::Device) deviceRefs.push_back(r);
  ASSERT_EQ(deviceRefs.size(), 2u);
  EXPECT_EQ(deviceRefs[0].flags, kRefCreate);
  EXPECT_EQ(objects().info(deviceRefs[1].obj).label, "dev-d1");
  // Seen again: the same object, read.
  filled = 1;
  const Leaf again = build(ApiId::clGetDeviceIDs,
                           {0xa0, CL_DEVICE_TYPE_ALL, 4, reinterpret_cast<uint64_t>(devices),
                            reinterpret_cast<uint64_t>(&filled)});
  ASSERT_FALSE(again.refs.empty());
  EXPECT_EQ(again.refs.back().obj, deviceRefs[0].obj);
  EXPECT_EQ(again.refs.back().flags, kRefRead);
}

TEST_F(CallModelTest, BufferOverHostMemoryIsCreatedWithItsParent) {
  const ObjectId seg = synth.malloc(0x20000, 8192);
  const Leaf leaf =
      build(ApiId::clCreateBuffer, {0xc0, CL_MEM_USE_HOST_PTR, 8192, 0x20000, 0}, 0x2200);
  ASSERT_EQ(leaf.refs.size(), 3u);  // context, host memory wrapped, the new buffer
  EXPECT_EQ(leaf.refs[1].access, HostAccess::Wrap);
  const Ref& created = leaf.refs[2];
  EXPECT_EQ(created.arg, kRefArgReturn);
  EXPECT_EQ(created.flags, kRefCreate);
  EXPECT_EQ(objects().kind(created.obj), ObjectKind::Mem);
  EXPECT_TRUE(objects().info(created.obj).fields & kObjParent);
  EXPECT_EQ(objects().info(created.obj).related, seg);
  EXPECT_EQ(synth.recorder().findHandle(0x2200), created.obj);
}

TEST_F(CallModelTest, MapForWritingDefinesNewVersionsOfBufferAndHostMemory) {
  const ObjectId mem = synth.recorder().createHandle(ObjectKind::Mem, 0x2000);
  const uint64_t mapped = 0x30000;
  synth.malloc(mapped, 4096);
  const Leaf map = build(ApiId::clEnqueueMapBuffer,
                         {0x1000, 0x2000, CL_TRUE, CL_MAP_WRITE, 0, 4096, 0, 0, 0, 0}, mapped);
  bool sawBuffer = false, sawHost = false;
  for (const Ref& r : map.refs) {
    if (r.obj == mem) {
      sawBuffer = true;
      EXPECT_EQ(r.flags, kRefWrite);
    }
    if (r.arg == kRefArgReturn) {
      sawHost = true;
      EXPECT_EQ(r.access, HostAccess::Mapped);
      EXPECT_EQ(r.bytes, 4096u);
      EXPECT_TRUE(r.flags & kRefWrite);
    }
  }
  EXPECT_TRUE(sawBuffer);
  EXPECT_TRUE(sawHost);
  const Leaf unmap = build(ApiId::clEnqueueUnmapMemObject, {0x1000, 0x2000, mapped, 0, 0, 0});
  ASSERT_FALSE(unmap.refs.empty());
  EXPECT_EQ(unmap.refs.back().access, HostAccess::Unmap);
  EXPECT_EQ(unmap.refs.back().endMax, 1u);
}

}  // namespace
}  // namespace hetopt::trace
