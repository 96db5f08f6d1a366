// SPDX-License-Identifier: MIT
/**
 * @file Which context optimize mode pins in (shim/core/context_choice.h), against a fake OpenCL
 * (fake_opencl.h): the early context handed to exactly the call that asks for it, once, and its
 * error callback reaching the program's; the program's context taken once, on the plan's device,
 * and retained; the driver thread's wait ended by the program's context or by a request for its
 * own; what a forked child no longer does.
 */
#include "shim/core/context_choice.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/shim/fake_opencl.h"

namespace hetopt::shim {
namespace {

using testing::FakeOpenCL;

template <typename T>
uint64_t arg(T v) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
}

/// clCreateContext(props, n, devices, notify, data, &err) as the generated wrapper records it.
struct CreateContextCall {
  uint64_t args[6];
  CallRecord call{};
  cl_int err = -1;
  CreateContextCall(const cl_context_properties* props, cl_uint n, const cl_device_id* devices,
                    void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*) = nullptr,
                    void* data = nullptr) {
    args[0] = arg(props);
    args[1] = n;
    args[2] = arg(devices);
    args[3] = arg(notify);
    args[4] = arg(data);
    args[5] = arg(&err);
    call.id = api::ApiId::clCreateContext;
    call.numArgs = 6;
    call.args = args;
  }
};

/// clCreateContextFromType(props, type, notify, data, &err).
struct FromTypeCall {
  uint64_t args[5];
  CallRecord call{};
  cl_int err = -1;
  FromTypeCall(const cl_context_properties* props, cl_device_type type) {
    args[0] = arg(props);
    args[1] = type;
    args[2] = args[3] = 0;
    args[4] = arg(&err);
    call.id = api::ApiId::clCreateContextFromType;
    call.numArgs = 5;
    call.args = args;
  }
};

decltype(&clCreateContext) fakeCreateContext() {
  return realClFunction<decltype(&clCreateContext)>(api::ApiId::clCreateContext);
}

class ContextChoiceTest : public ::testing::Test {
 protected:
  FakeOpenCL fake;
  ContextChoice choice;
  const cl_device_id device = FakeOpenCL::kDevice;
};

TEST_F(ContextChoiceTest, TheEarlyContextGoesToTheFirstCallThatAsksForExactlyItOnce) {
  choice.configure(false, true);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  ASSERT_TRUE(choice.earlyWanted());
  cl_context early = choice.makeEarly(fakeCreateContext());
  ASSERT_NE(early, nullptr);
  EXPECT_EQ(FakeOpenCL::retains.load(), 1);  // our reference beside the program's
  EXPECT_FALSE(choice.earlyWanted());

  CreateContextCall first(nullptr, 1, &device);
  choice.handOut(first.call);
  EXPECT_TRUE(first.call.skip);
  EXPECT_EQ(first.call.result, arg(early));
  EXPECT_EQ(first.err, CL_SUCCESS);

  CreateContextCall second(nullptr, 1, &device);
  choice.handOut(second.call);
  EXPECT_FALSE(second.call.skip);  // handed out once
  EXPECT_EQ(std::string(choice.origin()), "the early context (the program's)");
}

TEST_F(ContextChoiceTest, ACallForOtherDevicesOrOtherPropertiesIsNotAnsweredWithTheEarlyContext) {
  choice.configure(false, true);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  ASSERT_NE(choice.makeEarly(fakeCreateContext()), nullptr);
  const cl_device_id two[] = {device, FakeOpenCL::kOtherDevice};
  CreateContextCall both(nullptr, 2, two);
  choice.handOut(both.call);
  EXPECT_FALSE(both.call.skip);
  const cl_context_properties extra[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(FakeOpenCL::kPlatform),
      CL_CONTEXT_INTEROP_USER_SYNC, CL_TRUE, 0};
  CreateContextCall interop(extra, 1, &device);
  choice.handOut(interop.call);
  EXPECT_FALSE(interop.call.skip);
  FromTypeCall noPlatform(nullptr, CL_DEVICE_TYPE_GPU);  // FromType must name the platform
  choice.handOut(noPlatform.call);
  EXPECT_FALSE(noPlatform.call.skip);
  const cl_context_properties platform[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(FakeOpenCL::kPlatform), 0};
  FromTypeCall gpu(platform, CL_DEVICE_TYPE_GPU);
  choice.handOut(gpu.call);
  EXPECT_TRUE(gpu.call.skip);
  EXPECT_EQ(gpu.err, CL_SUCCESS);
}

TEST_F(ContextChoiceTest, TheProgramsErrorCallbackIsCalledThroughTheEarlyContexts) {
  choice.configure(false, true);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  ASSERT_NE(choice.makeEarly(fakeCreateContext()), nullptr);
  static std::string heard;
  static void* heardData;
  auto notify = [](const char* info, const void*, size_t, void* data) {
    heard = info;
    heardData = data;
  };
  int mine = 0;
  CreateContextCall call(nullptr, 1, &device, notify, &mine);
  choice.handOut(call.call);
  ASSERT_TRUE(call.call.skip);
  ASSERT_NE(FakeOpenCL::lastNotify.load(), nullptr);
  FakeOpenCL::lastNotify.load()("out of resources", nullptr, 0, FakeOpenCL::lastNotifyData.load());
  EXPECT_EQ(heard, "out of resources");
  EXPECT_EQ(heardData, &mine);
}

TEST_F(ContextChoiceTest, AHandOutWaitsWhileTheEarlyContextIsBeingMadeAndNotOnceItFailed) {
  choice.configure(false, true);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  std::atomic<bool> answered{false};
  CreateContextCall call(nullptr, 1, &device);
  std::thread program([&] {
    choice.handOut(call.call);
    answered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(answered.load());  // the early context is being made
  ASSERT_NE(choice.makeEarly(fakeCreateContext()), nullptr);
  program.join();
  EXPECT_TRUE(call.call.skip);

  ContextChoice abandoned;
  abandoned.configure(false, true);
  abandoned.setDevice(FakeOpenCL::kPlatform, device);
  abandoned.abandonEarly();  // enumeration failed: nothing to wait for
  CreateContextCall own(nullptr, 1, &device);
  abandoned.handOut(own.call);
  EXPECT_FALSE(own.call.skip);
}

TEST_F(ContextChoiceTest, AFailedEarlyContextLeavesThePinningToTheProgramsContext) {
  FakeOpenCL::failContexts = true;
  choice.configure(false, true);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  EXPECT_EQ(choice.makeEarly(fakeCreateContext()), nullptr);
  EXPECT_FALSE(choice.exists());
  CreateContextCall call(nullptr, 1, &device);
  choice.handOut(call.call);
  EXPECT_FALSE(call.call.skip);
}

TEST_F(ContextChoiceTest, TheProgramsContextOnThePlansDeviceIsTakenOnceAndRetained) {
  choice.configure(false, false);
  CreateContextCall tooSoon(nullptr, 1, &device);
  tooSoon.call.result = arg(FakeOpenCL::programContext(0));
  EXPECT_EQ(choice.offer(tooSoon.call), nullptr);  // before enumeration: the device is unknown
  choice.setDevice(FakeOpenCL::kPlatform, device);

  const cl_device_id other = FakeOpenCL::kOtherDevice;
  CreateContextCall elsewhere(nullptr, 1, &other);
  elsewhere.call.result = arg(FakeOpenCL::programContext(1));
  EXPECT_EQ(choice.offer(elsewhere.call), nullptr);
  EXPECT_EQ(FakeOpenCL::retains.load(), 0);

  CreateContextCall first(nullptr, 1, &device);
  first.call.result = arg(FakeOpenCL::programContext(2));
  EXPECT_EQ(choice.offer(first.call), FakeOpenCL::programContext(2));
  EXPECT_EQ(FakeOpenCL::retains.load(), 1);  // kept for the process's life

  FromTypeCall second(nullptr, CL_DEVICE_TYPE_GPU);  // asked for its devices: the plan's
  second.call.result = arg(FakeOpenCL::programContext(3));
  EXPECT_EQ(choice.offer(second.call), nullptr);
  EXPECT_EQ(FakeOpenCL::retains.load(), 1);
  EXPECT_TRUE(choice.exists());
  EXPECT_EQ(choice.await(), FakeOpenCL::programContext(2));
  EXPECT_EQ(std::string(choice.origin()), "the program's context");
}

TEST_F(ContextChoiceTest, TheDriverThreadWaitsForTheProgramsContextOrARequestForItsOwn) {
  choice.configure(false, false);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  EXPECT_EQ(std::string(choice.origin()), "no context yet");
  cl_context got = reinterpret_cast<cl_context>(1);
  std::thread driver([&] { got = choice.await(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  choice.requestOwn();  // a candidate allocation before any context (the direct variant)
  driver.join();
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(std::string(choice.origin()), "its own context");
  CreateContextCall late(nullptr, 1, &device);
  late.call.result = arg(FakeOpenCL::programContext(0));
  EXPECT_EQ(choice.offer(late.call), nullptr);  // chosen: later offers are ignored

  ContextChoice offered;
  offered.configure(false, false);
  offered.setDevice(FakeOpenCL::kPlatform, device);
  std::thread driver2([&] { got = offered.await(); });
  CreateContextCall program(nullptr, 1, &device);
  program.call.result = arg(FakeOpenCL::programContext(4));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(offered.offer(program.call), FakeOpenCL::programContext(4));
  driver2.join();
  EXPECT_EQ(got, FakeOpenCL::programContext(4));
}

TEST_F(ContextChoiceTest, OwnOnlyNeitherWaitsNorTakesTheProgramsContext) {
  choice.configure(true, false);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  CreateContextCall program(nullptr, 1, &device);
  program.call.result = arg(FakeOpenCL::programContext(0));
  EXPECT_EQ(choice.offer(program.call), nullptr);
  EXPECT_EQ(choice.await(), nullptr);
  EXPECT_EQ(std::string(choice.origin()), "its own context");
}

TEST_F(ContextChoiceTest, AForkedChildNeitherHandsOutNorTakesAContext) {
  choice.configure(false, true);
  choice.setDevice(FakeOpenCL::kPlatform, device);
  ASSERT_NE(choice.makeEarly(fakeCreateContext()), nullptr);
  choice.lockForFork();
  choice.forkChild();
  choice.unlockAfterFork();
  CreateContextCall call(nullptr, 1, &device);
  choice.handOut(call.call);
  EXPECT_FALSE(call.call.skip);
  call.call.result = arg(FakeOpenCL::programContext(0));
  EXPECT_EQ(choice.offer(call.call), nullptr);
}

}  // namespace
}  // namespace hetopt::shim
