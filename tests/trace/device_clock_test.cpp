// SPDX-License-Identifier: MIT
/** @file The device clock estimate from timed commands' QUEUED timestamps (trace/device_clock.h).
 */
#include "trace/device_clock.h"

#include <gtest/gtest.h>

using hetopt::trace::ClockEstimate;

namespace {
constexpr uint64_t kDeviceEpoch = 1700000000000000000ull;  // a device clock far from the trace's
constexpr int64_t kTrue = 5000 - static_cast<int64_t>(kDeviceEpoch);  // trace ns = device ns + this
}  // namespace

// Each command says the offset lies between its call's start and end minus its QUEUED time; the
// intersection narrows to the truth.
TEST(ClockEstimate, NarrowsToTheIntersectionOfTheCommandsIntervals) {
  ClockEstimate c;
  EXPECT_FALSE(c.known());
  // QUEUED stamped 30 us into a 100 us call, then 2 us into a 10 us call, then 7 us into a 8 us
  // one.
  EXPECT_TRUE(c.add(1000000, 1100000, static_cast<uint64_t>(1030000 - kTrue)));
  EXPECT_EQ(c.uncertaintyNs(), 50000u);
  EXPECT_TRUE(c.add(2000000, 2010000, static_cast<uint64_t>(2002000 - kTrue)));
  EXPECT_TRUE(c.add(3000000, 3008000, static_cast<uint64_t>(3007000 - kTrue)));
  ASSERT_TRUE(c.known());
  // Intersection: the truth -2 us (the 2nd's start) to +1 us (the 3rd's end).
  EXPECT_EQ(c.uncertaintyNs(), 1500u);
  EXPECT_EQ(c.offsetNs(), kTrue - 500);
  // A wider interval that agrees changes nothing.
  EXPECT_FALSE(c.add(4000000, 4500000, static_cast<uint64_t>(4100000 - kTrue)));
}

// A command that contradicts the interval (QUEUED stamped after its call returned) is taken only
// when it is narrower than what the interval has become; a reversed call is ignored.
TEST(ClockEstimate, ContradictionsKeepTheNarrowerInterval) {
  ClockEstimate c;
  c.add(1000, 1100, 500);                // offset in [500, 600]
  EXPECT_FALSE(c.add(2000, 2500, 500));  // [1500, 2000]: disjoint and wider
  EXPECT_EQ(c.offsetNs(), 550);
  EXPECT_TRUE(c.add(3000, 3010, 1000));  // [2000, 2010]: disjoint but narrower
  EXPECT_EQ(c.offsetNs(), 2005);
  EXPECT_EQ(c.uncertaintyNs(), 5u);
  EXPECT_FALSE(c.add(5000, 4000, 100));
  EXPECT_EQ(c.offsetNs(), 2005);
}
