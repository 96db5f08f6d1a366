// SPDX-License-Identifier: MIT
/** @file Trace conformance (shim/core/conformance.h): which behaviour counts as divergence. */
#include "shim/core/conformance.h"

#include <gtest/gtest.h>

#include <string>

using hetopt::Plan;
using hetopt::PlanSite;
using hetopt::shim::Conformance;

namespace {

constexpr uint64_t kMiB = 1 << 20;

// One site profiled with 10 allocations of 1-2 MiB, at most 3 blocks (4 MiB) alive at once.
Plan profiledPlan() {
  Plan plan;
  PlanSite s;
  s.key = 0xabc;
  s.profiled = true;
  s.profile = {10, 1 * kMiB, 2 * kMiB, 1 * kMiB, 4 * kMiB, 3};
  plan.sites = {s};
  return plan;
}

Conformance::Usage usage(uint64_t served, uint64_t live, uint64_t liveBytes, uint64_t transfers) {
  return {served, live, liveBytes, transfers};
}

}  // namespace

TEST(Conformance, TheProfiledBehaviourAndSomeSlackStayConformant) {
  Plan plan = profiledPlan();
  Conformance c;
  c.expect(plan);
  EXPECT_TRUE(c.admit(plan.sites[0], 1 * kMiB, usage(0, 0, 0, 0)));
  EXPECT_TRUE(c.admit(plan.sites[0], 8 * kMiB, usage(1, 1, kMiB, 0)));       // 4x the largest
  EXPECT_TRUE(c.admit(plan.sites[0], 64 * 1024, usage(2, 2, 9 * kMiB, 1)));  // 1/16 the smallest
  // A thousand loop iterations where the trace saw ten: still the same program.
  EXPECT_TRUE(c.admit(plan.sites[0], kMiB, usage(1000, 3, 4 * kMiB, 2000)));
  EXPECT_FALSE(c.diverged());
  EXPECT_STREQ(c.reason(), "");
}

TEST(Conformance, AFarLargerBlockDeactivatesForGoodWithTheReason) {
  Plan plan = profiledPlan();
  Conformance c;
  c.expect(plan);
  EXPECT_FALSE(c.admit(plan.sites[0], 64 * kMiB, usage(0, 0, 0, 0)));
  ASSERT_TRUE(c.diverged());
  EXPECT_NE(std::string(c.reason()).find("allocated 64 MiB, profiled at most 2 MiB"),
            std::string::npos)
      << c.reason();
  EXPECT_NE(std::string(c.reason()).find("0000000000000abc"), std::string::npos) << c.reason();
  EXPECT_FALSE(c.admit(plan.sites[0], kMiB, usage(0, 0, 0, 0)));  // final
  c.diverge("another reason");
  EXPECT_EQ(std::string(c.reason()).find("another"), std::string::npos);  // the first one stays
}

TEST(Conformance, FarSmallerBlocksDeactivate) {
  Plan plan = profiledPlan();
  Conformance c;
  c.expect(plan);
  EXPECT_FALSE(c.admit(plan.sites[0], 32 * 1024, usage(0, 0, 0, 0)));
  EXPECT_NE(std::string(c.reason()).find("profiled at least 1 MiB"), std::string::npos)
      << c.reason();
}

TEST(Conformance, TooMuchLiveMemoryDeactivates) {
  Plan plan = profiledPlan();
  Conformance blocks, bytes;
  blocks.expect(plan);
  bytes.expect(plan);
  EXPECT_TRUE(blocks.admit(plan.sites[0], kMiB, usage(27, 27, 0, 1)));
  EXPECT_FALSE(blocks.admit(plan.sites[0], kMiB, usage(28, 28, 0, 1)));  // 4 * 3 + 16
  EXPECT_NE(std::string(blocks.reason()).find("28 redirected blocks alive"), std::string::npos)
      << blocks.reason();
  EXPECT_TRUE(bytes.admit(plan.sites[0], kMiB, usage(5, 5, 79 * kMiB, 1)));
  EXPECT_FALSE(bytes.admit(plan.sites[0], kMiB, usage(5, 5, 80 * kMiB, 1)));  // 4 * 4 + 64 MiB
  EXPECT_NE(std::string(bytes.reason()).find("alive at once, profiled peak 4 MiB"),
            std::string::npos)
      << bytes.reason();
}

TEST(Conformance, RedirectedMemoryThatNeverCrossesDeactivates) {
  Plan plan = profiledPlan();
  Conformance c;
  c.expect(plan);
  EXPECT_TRUE(c.admit(plan.sites[0], kMiB, usage(63, 1, kMiB, 0)));  // at least 64
  EXPECT_FALSE(c.admit(plan.sites[0], kMiB, usage(64, 1, kMiB, 0)));
  EXPECT_NE(std::string(c.reason()).find("64 redirected allocations and none fed a transfer"),
            std::string::npos)
      << c.reason();
}

TEST(Conformance, UnprofiledSitesAreNotChecked) {
  Plan plan = profiledPlan();
  PlanSite hand;
  hand.key = 0xdef;
  plan.sites.push_back(hand);
  Conformance c;
  c.expect(plan);
  EXPECT_TRUE(c.admit(plan.sites[1], 1ull << 40, usage(100000, 100000, 1ull << 40, 0)));
  // The profiled site's own size range still holds; whole-run limits need every site profiled.
  EXPECT_FALSE(c.admit(plan.sites[0], 64 * kMiB, usage(0, 0, 0, 0)));
}
