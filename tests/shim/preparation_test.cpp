// SPDX-License-Identifier: MIT
/**
 * @file How far optimize mode's driver thread has got, and the program's waits on it
 * (shim/core/preparation.h), with threads standing in for the driver thread and the program: the
 * first OpenCL call waits for enumeration and, with a late driver, starts the driver thread once;
 * a failure is said once and ends every wait; a pool site's allocation waits for a pool in
 * preparation only HETOPT_POOL_WAIT_MS, and never for one whose thread waits for the program;
 * fork() waits while hetopt's thread is inside the driver and calls off a start-up not begun.
 */
#include "shim/core/preparation.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace hetopt::shim {
namespace {

// Read once by the first waitReady() of the process: long enough that a test sees a wait end early.
const bool kPoolWaitSet = setenv("HETOPT_POOL_WAIT_MS", "3000", 1) == 0;

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

TEST(Preparation, TheProgramsCallsWaitForEnumeration) {
  Preparation prep;
  prep.decide(false, "");
  ASSERT_TRUE(prep.enterDriver(true));
  std::atomic<bool> through{false};
  std::thread program([&] {
    prep.awaitEnumeration([] { FAIL() << "an early driver is never started by the program"; });
    through = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_FALSE(through.load());
  prep.markEnumerated();
  program.join();
  EXPECT_TRUE(through.load());
  EXPECT_TRUE(prep.enumerated());
}

TEST(Preparation, WithALateDriverTheFirstCallStartsTheDriverThreadOnce) {
  Preparation prep;
  prep.decide(true, "");
  EXPECT_TRUE(prep.late());
  EXPECT_EQ(prep.describeDriver(), "late: the plan says so");
  EXPECT_FALSE(prep.enterDriver(true));  // the early thread does nothing
  std::atomic<int> started{0};
  std::thread driver;
  std::vector<std::thread> calls;
  for (int i = 0; i < 3; ++i)
    calls.emplace_back([&] {
      prep.awaitEnumeration([&] {  // under the mutex: once
        ++started;
        driver = std::thread([&] {
          EXPECT_TRUE(prep.enterDriver(false));
          prep.markEnumerated();
          prep.setInDriver(false);
        });
      });
    });
  for (std::thread& t : calls) t.join();
  driver.join();
  EXPECT_EQ(started.load(), 1);
}

TEST(Preparation, AFailureIsRecordedAndEndsEveryWait) {
  Preparation prep;
  prep.decide(false, "");
  std::thread program([&] { prep.awaitEnumeration([] {}); });
  prep.fail("no OpenCL loader in this process");
  program.join();
  EXPECT_EQ(prep.pool(), Preparation::Pool::Failed);
  EXPECT_STREQ(prep.failure(), "no OpenCL loader in this process");
  const auto start = Clock::now();
  EXPECT_FALSE(prep.waitReady());
  EXPECT_LT(msSince(start), 1000);
}

TEST(Preparation, APoolThatGetsReadyEndsTheWaitOfAnAllocation) {
  (void)kPoolWaitSet;
  Preparation prep;
  prep.decide(false, "");
  ASSERT_TRUE(prep.enterDriver(true));
  prep.markEnumerated();
  const auto start = Clock::now();
  std::thread driver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    prep.markReady(0);
  });
  EXPECT_TRUE(prep.waitReady());
  driver.join();
  EXPECT_LT(msSince(start), 2500);
  EXPECT_EQ(prep.pool(), Preparation::Pool::Ready);
}

TEST(Preparation, NoAllocationWaitsForAPoolWhoseThreadWaitsForTheProgram) {
  Preparation prep;
  prep.decide(false, "/usr/bin/python3 imports fork");  // late: the driver thread is not running
  const auto start = Clock::now();
  EXPECT_FALSE(prep.waitReady());
  EXPECT_LT(msSince(start), 1000);
}

TEST(Preparation, AForkWaitsWhileHetoptsThreadIsInsideTheDriver) {
  Preparation prep;
  prep.decide(false, "");
  ASSERT_TRUE(prep.enterDriver(true));
  std::atomic<bool> forked{false};
  std::thread program([&] {
    prep.beforeFork();
    forked = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_FALSE(forked.load());
  prep.setInDriver(false);
  program.join();
  EXPECT_FALSE(prep.late());  // it had begun: the driver stays started early
}

TEST(Preparation, AForkBeforeTheDriverThreadBeganCallsItsStartOff) {
  Preparation prep;
  prep.decide(false, "");
  prep.beforeFork();
  EXPECT_TRUE(prep.late());
  EXPECT_EQ(prep.describeDriver(), "late: the program forked before hetopt started the driver");
  EXPECT_FALSE(prep.enterDriver(true));
  EXPECT_FALSE(prep.beginLoading());  // nor is anything loaded for it
}

TEST(Preparation, AfterTheProgramsOwnCallsForkAndExitWaitForNothing) {
  Preparation prep;
  prep.decide(false, "");
  ASSERT_TRUE(prep.enterDriver(true));  // and stays inside
  prep.noteProgramCall();
  prep.noteProgramContext();
  const auto start = Clock::now();
  prep.beforeFork();
  prep.beforeExit();
  EXPECT_LT(msSince(start), 1000);
  EXPECT_FALSE(prep.beginLoading());  // the program's first call loads the libraries itself
}

TEST(Preparation, AForkedChildKnowsWhatItsParentStartedAndWaitsForNothing) {
  Preparation prep;
  prep.decide(false, "");
  ASSERT_TRUE(prep.enterDriver(true));
  prep.lockForFork();
  const Preparation::Inherited parent = prep.forkChild();
  prep.unlockAfterFork();
  EXPECT_TRUE(parent.driverStarted);
  EXPECT_FALSE(parent.programCalledOpenCL);
  EXPECT_EQ(prep.pool(), Preparation::Pool::Failed);
  EXPECT_STREQ(prep.failure(), "forked child");
  EXPECT_TRUE(prep.enumerated());
  const auto start = Clock::now();
  prep.beforeExit();  // the parent's thread is not in the child
  EXPECT_LT(msSince(start), 1000);
}

}  // namespace
}  // namespace hetopt::shim
