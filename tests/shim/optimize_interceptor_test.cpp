// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode as a whole, against a fake OpenCL (fake_opencl.h) instead of a driver: the
 * program's first OpenCL call starts the driver thread (this test binary imports fork, so the
 * driver is late), the pool is made in the program's context or in the early context handed to it,
 * a pool site's allocations are served, resized and released there and its transfers counted as
 * pinned, a start-up-only plan makes the early context and nothing else, and a context that cannot
 * be made leaves the program unoptimized with the reason in the stats (read as HETOPT_STATS_JSON).
 */
#include "shim/core/optimize_interceptor.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "shim/core/callsite.h"
#include "tests/common/temp_dir.h"
#include "tests/shim/fake_opencl.h"

namespace hetopt::shim {
namespace {

using testing::FakeOpenCL;

constexpr uint64_t kMiB = 1 << 20;

__attribute__((noinline)) CallSite candidateSite() {
  CallSite site;
  captureCallSite(&site, 4);
  asm volatile("");
  return site;
}

template <typename T>
uint64_t arg(T v) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
}

/// An OpenCL call as the generated wrappers bracket it: callBegin, the real call (faked), callEnd.
struct Call {
  uint64_t args[10] = {};
  CallRecord record{};
  Call(api::ApiId id, unsigned n) {
    record.id = id;
    record.numArgs = n;
    record.args = args;
  }
};

Plan poolPlan(const CallSite& site) {
  Plan plan;
  plan.programPath = "/usr/bin/app";
  plan.programKey = "build-id:00";
  plan.poolPolicy = "opencl";
  plan.poolBytes = kMiB;
  plan.driverLate = true;
  PlanSite s;
  s.key = siteKey(site);
  s.minBytes = 4096;
  s.maxBytes = 256 << 10;
  plan.sites.push_back(s);
  return plan;
}

class OptimizeInterceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("HETOPT_DRIVER_PRELOAD", "0", 1);  // nothing of a real driver is loaded
    unsetenv("HETOPT_POOL_CONTEXT");
    setenv("HETOPT_STATS_JSON", dir.file("stats.json").c_str(), 1);
  }
  void TearDown() override { unsetenv("HETOPT_STATS_JSON"); }

  /// The program's first OpenCL call: starts the late driver thread and waits for enumeration.
  static void firstCall(OptimizeInterceptor& opt) {
    Call c(api::ApiId::clGetPlatformIDs, 3);
    opt.callBegin(c.record);
    opt.callEnd(c.record);
  }
  /// The program's clCreateContext on the fake's device: answered by callBegin (the early context)
  /// or by the "driver" here. The context the program got.
  static cl_context createContext(OptimizeInterceptor& opt, cl_context fromDriver) {
    static const cl_device_id device = FakeOpenCL::kDevice;
    static cl_int err;
    Call c(api::ApiId::clCreateContext, 6);
    c.args[1] = 1;
    c.args[2] = arg(&device);
    c.args[5] = arg(&err);
    opt.callBegin(c.record);
    if (!c.record.skip) {
      err = CL_SUCCESS;
      c.record.result = arg(fromDriver);
    }
    opt.callEnd(c.record);
    return reinterpret_cast<cl_context>(static_cast<uintptr_t>(c.record.result));
  }
  static bool waitUntilSettled(const OptimizeInterceptor& opt) {
    for (int i = 0; i < 500 && opt.preparation().pool() == Preparation::Pool::Preparing; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return opt.preparation().pool() != Preparation::Pool::Preparing;
  }
  std::string statsJson(OptimizeInterceptor& opt) {
    opt.processExit();
    std::ifstream in(dir.file("stats.json"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  FakeOpenCL fake;
  hetopt::testing::TempDir dir;
};

TEST_F(OptimizeInterceptorTest, APoolMadeInTheProgramsContextServesItsSiteAndCountsItsTransfers) {
  const CallSite site = candidateSite();
  OptimizeInterceptor* opt = OptimizeInterceptor::createFor(poolPlan(site), dir.file("app.plan"));
  ASSERT_NE(opt, nullptr);
  const Wants wants = opt->wants();
  EXPECT_FALSE(wants.allocations);
  EXPECT_EQ(wants.serveMin, 4096u);
  EXPECT_EQ(wants.serveMax, 256u << 10);
  EXPECT_EQ(opt->serve(AllocFn::Malloc, 8192, 0, site), nullptr);  // no context yet: not waited for

  firstCall(*opt);
  EXPECT_TRUE(opt->preparation().enumerated());
  EXPECT_EQ(createContext(*opt, FakeOpenCL::programContext(0)), FakeOpenCL::programContext(0));
  ASSERT_TRUE(waitUntilSettled(*opt));
  ASSERT_EQ(opt->preparation().pool(), Preparation::Pool::Ready) << opt->preparation().failure();
  EXPECT_EQ(FakeOpenCL::retains.load(), 1);  // the program's context, kept for the pool's life

  void* p = opt->serve(AllocFn::Malloc, 8192, 0, site);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(opt->owns(p));
  EXPECT_GE(opt->usableSize(p), 8192u);
  EXPECT_EQ(opt->serve(AllocFn::Malloc, 8192, 0, CallSite{}), nullptr);  // another site

  // clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, 0, null, null) from it.
  Call write(api::ApiId::clEnqueueWriteBuffer, 9);
  write.args[4] = 4096;
  write.args[5] = arg(p);
  opt->callBegin(write.record);
  write.record.result = CL_SUCCESS;
  opt->callEnd(write.record);

  void* grown = nullptr;
  ASSERT_TRUE(opt->reallocate(p, 16384, nullptr, &grown));
  ASSERT_NE(grown, nullptr);
  EXPECT_TRUE(opt->owns(grown));
  void* gone = reinterpret_cast<void*>(1);
  ASSERT_TRUE(opt->reallocate(grown, 0, nullptr, &gone));  // size 0 frees it
  EXPECT_EQ(gone, nullptr);  // released: the stats below count it (owns() is the pool's range)

  const std::string json = statsJson(*opt);
  EXPECT_NE(json.find("\"pool\":\"opencl pool of 1.0 MiB in the program's context, ready after"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"redirected\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"released\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"transfers_pinned_pool\":{\"h2d\":1,\"h2d_bytes\":4096,"),
            std::string::npos)
      << json;
}

TEST_F(OptimizeInterceptorTest, TheEarlyContextIsHandedToTheProgramAndThePoolIsMadeInIt) {
  const CallSite site = candidateSite();
  Plan plan = poolPlan(site);
  plan.earlyContext = true;
  OptimizeInterceptor* opt = OptimizeInterceptor::createFor(std::move(plan), dir.file("app.plan"));
  ASSERT_NE(opt, nullptr);
  firstCall(*opt);
  const cl_context got = createContext(*opt, FakeOpenCL::programContext(1));
  EXPECT_NE(got, FakeOpenCL::programContext(1));  // the early one, made by the driver thread
  EXPECT_EQ(FakeOpenCL::contextsMade.load(), 1);
  ASSERT_TRUE(waitUntilSettled(*opt));
  ASSERT_EQ(opt->preparation().pool(), Preparation::Pool::Ready) << opt->preparation().failure();
  EXPECT_NE(statsJson(*opt).find("in the early context (the program's), ready after"),
            std::string::npos);
}

TEST_F(OptimizeInterceptorTest, AContextThatCannotBeMadeLeavesTheProgramUnoptimizedWithTheReason) {
  setenv("HETOPT_POOL_CONTEXT", "own", 1);
  FakeOpenCL::failContexts = true;
  const CallSite site = candidateSite();
  OptimizeInterceptor* opt = OptimizeInterceptor::createFor(poolPlan(site), dir.file("app.plan"));
  ASSERT_NE(opt, nullptr);
  firstCall(*opt);
  ASSERT_TRUE(waitUntilSettled(*opt));
  EXPECT_EQ(opt->preparation().pool(), Preparation::Pool::Failed);
  EXPECT_EQ(opt->serve(AllocFn::Malloc, 8192, 0, site), nullptr);
  const std::string json = statsJson(*opt);
  EXPECT_NE(json.find("\"pool\":\"no pool (clCreateContext failed (OpenCL status -2))\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"fallback_no_pool\":1"), std::string::npos) << json;
}

// A plan whose only gain is the start-up: the early context is made and handed over, and nothing
// else: no allocation is looked at, no queue or buffer made, no other context taken.
TEST_F(OptimizeInterceptorTest, AStartUpOnlyPlanMakesTheEarlyContextAndPinsNothing) {
  Plan plan;
  plan.programPath = "/usr/bin/app";
  plan.programKey = "build-id:00";
  plan.poolPolicy = "none";
  plan.earlyContext = true;
  plan.driverLate = true;  // this test binary imports fork: the driver is late anyway
  ASSERT_TRUE(plan.startupOnly());
  OptimizeInterceptor* opt = OptimizeInterceptor::createFor(plan, dir.file("app.plan"));
  ASSERT_NE(opt, nullptr);
  const Wants wants = opt->wants();
  EXPECT_FALSE(wants.allocations);
  EXPECT_FALSE(wants.mappings);
  EXPECT_GT(wants.serveMin, wants.serveMax);  // no size is served: no call site is captured
  EXPECT_EQ(opt->serve(AllocFn::Malloc, 8192, 0, candidateSite()), nullptr);
  firstCall(*opt);
  const cl_context got = createContext(*opt, FakeOpenCL::programContext(1));
  EXPECT_NE(got, FakeOpenCL::programContext(1));  // the early one
  EXPECT_EQ(FakeOpenCL::contextsMade.load(), 1);
  ASSERT_TRUE(waitUntilSettled(*opt));
  EXPECT_EQ(opt->preparation().pool(), Preparation::Pool::Ready) << opt->preparation().failure();
  // A second context of the program's own is left alone (not retained for pinning).
  EXPECT_EQ(createContext(*opt, FakeOpenCL::programContext(2)), FakeOpenCL::programContext(2));
  EXPECT_EQ(FakeOpenCL::retains.load(), 1);  // the early context's, ours beside the program's
  EXPECT_EQ(FakeOpenCL::queuesMade.load(), 0);
  const std::string json = statsJson(*opt);
  for (const char* fact :
       {"\"pool\":\"nothing pinned: a start-up-only plan\"", "\"pool_state\":\"none\"",
        "\"conformant\":true", "\"candidate_sites\":0", "\"redirected\":0",
        "\"context\":\"the early context (the program's)\""})
    EXPECT_NE(json.find(fact), std::string::npos) << fact << "\n" << json;
  // Without the early context it has nothing to do.
  setenv("HETOPT_POOL_CONTEXT", "own", 1);
  EXPECT_EQ(OptimizeInterceptor::createFor(plan, ""), nullptr);
  unsetenv("HETOPT_POOL_CONTEXT");
  plan.earlyContext = false;
  EXPECT_EQ(OptimizeInterceptor::createFor(plan, ""), nullptr);
}

TEST_F(OptimizeInterceptorTest, APlanWithNothingToDoOrAPolicyThatCannotPoolIsRefused) {
  Plan empty;
  EXPECT_EQ(OptimizeInterceptor::createFor(empty, ""), nullptr);
  Plan registerPool = poolPlan(candidateSite());
  registerPool.poolPolicy = "register";
  EXPECT_EQ(OptimizeInterceptor::createFor(registerPool, ""), nullptr);
}

}  // namespace
}  // namespace hetopt::shim
