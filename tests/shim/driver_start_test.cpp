// SPDX-License-Identifier: MIT
/**
 * @file When optimize mode's thread may start the OpenCL driver (shim/core/driver_start.h): early
 * only where the process cannot fork; a fork() before hetopt's thread began calls its start-up
 * off, one while it is inside the driver or loading it waits. The threads and the mutex around it
 * are optimize mode's; here the decisions alone, in the order they can come.
 */
#include "shim/core/driver_start.h"

#include <gtest/gtest.h>

namespace hetopt::shim {
namespace {

TEST(DriverStart, AProcessThatCannotForkGetsTheDriverEarly) {
  DriverStart d;
  d.decide(false, "");
  EXPECT_FALSE(d.late());
  EXPECT_EQ(d.describe(), "early");
  EXPECT_TRUE(d.enterDriver());
  EXPECT_TRUE(d.driverStarted());
  EXPECT_TRUE(d.busy());
  EXPECT_TRUE(d.forkMustWait());  // inside the driver: fork() waits
  d.setInDriver(false);
  EXPECT_FALSE(d.forkMustWait());  // started and out: a child inherits it (the fork marker's case)
  EXPECT_FALSE(d.late());
  EXPECT_TRUE(d.driverStarted());
}

TEST(DriverStart, AProcessThatImportsForkLeavesTheDriverToTheProgram) {
  DriverStart d;
  d.decide(false, "/usr/bin/python3.11");
  EXPECT_TRUE(d.late());
  EXPECT_EQ(d.why(), DriverStart::Why::CanFork);
  EXPECT_EQ(d.describe(), "late: the program can fork (/usr/bin/python3.11 imports fork)");
  EXPECT_FALSE(d.enterDriver());
  EXPECT_FALSE(d.driverStarted());
}

TEST(DriverStart, APlanThatSaysLateWinsOverEverything) {
  DriverStart d;
  d.decide(true, "");
  EXPECT_EQ(d.why(), DriverStart::Why::Plan);
  EXPECT_FALSE(d.enterDriver());
}

TEST(DriverStart, AForkBeforeHetoptsThreadBeganCallsTheEarlyDriverOff) {
  DriverStart d;
  d.decide(false, "");
  EXPECT_FALSE(d.forkMustWait());  // nothing begun: nothing to wait for
  EXPECT_TRUE(d.late());
  EXPECT_EQ(d.why(), DriverStart::Why::Forked);
  EXPECT_FALSE(d.enterDriver());  // the thread, when it runs, does nothing
  EXPECT_FALSE(d.driverStarted());
  EXPECT_FALSE(d.busy());
}

TEST(DriverStart, AForkWaitsForTheLibrariesBeingLoadedAndCallsOffALoadNotBegun) {
  DriverStart loading;
  loading.decide(false, "/usr/bin/python3.11");
  EXPECT_TRUE(loading.beginLoading());
  EXPECT_TRUE(loading.forkMustWait());  // inside dlopen(): the child would inherit its lock
  loading.endLoading();
  EXPECT_FALSE(loading.forkMustWait());
  EXPECT_FALSE(loading.driverStarted());  // loaded, never called: the child may use it

  DriverStart notYet;
  notYet.decide(true, "");
  EXPECT_FALSE(notYet.forkMustWait());
  EXPECT_FALSE(notYet.beginLoading());
  EXPECT_EQ(notYet.why(), DriverStart::Why::Plan);
}

TEST(DriverStart, TheDriverThreadAndTheLoadingThreadAreWaitedForApart) {
  DriverStart d;
  d.decide(false, "/usr/bin/python3.11");
  ASSERT_TRUE(d.beginLoading());
  d.setInDriver(true);  // the late driver's thread, started by the program's first call
  d.endLoading();
  EXPECT_TRUE(d.busy());  // the loading's end does not hide the driver thread
  d.setInDriver(false);
  EXPECT_FALSE(d.busy());
}

TEST(DriverStart, AForkedChildHasNoThreadOfHetoptsInside) {
  DriverStart d;
  d.decide(false, "");
  ASSERT_TRUE(d.enterDriver());
  d.forkChild();
  EXPECT_FALSE(d.busy());
  EXPECT_TRUE(d.driverStarted());  // what it inherited: a driver it cannot use
}

}  // namespace
}  // namespace hetopt::shim
