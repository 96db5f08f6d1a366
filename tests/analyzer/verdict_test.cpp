// SPDX-License-Identifier: MIT
/**
 * @file The closed loop's paired test (analyzer/verdict.h): clear gains are kept and clear losses
 * reverted after a few pairs, noise of the size measured on the GPU VMs keeps a small effect
 * exploring instead of deciding, and a verdict stands until its window says the opposite.
 */
#include "analyzer/verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace hetopt::analyzer {
namespace {

// Pairs whose control/optimized ratio is `ratio` times exp(noise), noise ~ N(0, sigma).
std::vector<RunPair> pairs(size_t n, double ratio, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  std::vector<RunPair> out;
  for (size_t i = 0; i < n; ++i) {
    const double control = 1e9 * std::exp(noise(rng));
    out.push_back({control, control / (ratio * std::exp(noise(rng)))});
  }
  return out;
}

TEST(Verdict, StudentQuantilesAreTheTablesOnes) {
  EXPECT_NEAR(studentT90(1), 3.078, 1e-3);
  EXPECT_NEAR(studentT90(4), 1.533, 1e-3);
  EXPECT_NEAR(studentT90(30), 1.310, 1e-3);
  EXPECT_NEAR(studentT90(60), 1.296, 2e-3);
  EXPECT_NEAR(studentT90(1000), 1.282, 2e-3);
  EXPECT_NEAR(studentT95(1), 6.314, 1e-3);
  EXPECT_NEAR(studentT95(4), 2.132, 1e-3);
  EXPECT_NEAR(studentT95(30), 1.697, 1e-3);
  EXPECT_NEAR(studentT95(60), 1.671, 3e-3);
  EXPECT_NEAR(studentT95(1000), 1.646, 3e-3);
}

TEST(Verdict, FewerThanThreePairsNeverDecide) {
  const std::vector<RunPair> two = {{2e9, 1e9}, {2.1e9, 1e9}};
  const Verdict v = judgePairs(two);
  EXPECT_EQ(v.state, VerdictState::Exploring);
  EXPECT_EQ(v.pairs, 2u);
  EXPECT_GT(v.pairedMedian, 1.9);
}

TEST(Verdict, AClearGainIsKeptAfterThreePairs) {
  const Verdict v = judgePairs({{1.30e9, 1e9}, {1.32e9, 1e9}, {1.28e9, 1e9}});
  EXPECT_EQ(v.state, VerdictState::Kept);
  EXPECT_GT(v.ciLow, 1.2);
  EXPECT_LT(v.ciHigh, 1.4);
  EXPECT_NEAR(v.pairedMedian, 1.30, 1e-9);
  EXPECT_TRUE(v.optimizes());
}

TEST(Verdict, AClearLossIsRevertedAfterThreePairs) {
  const Verdict v = judgePairs({{0.80e9, 1e9}, {0.82e9, 1e9}, {0.79e9, 1e9}});
  EXPECT_EQ(v.state, VerdictState::Reverted);
  EXPECT_LT(v.ciHigh, 0.9);
  EXPECT_FALSE(v.optimizes());
}

TEST(Verdict, OneWildPairWidensTheIntervalInsteadOfReverting) {
  // A gain of ~10% with one pair where the control ran 30% fast (a noisy VM).
  const Verdict v = judgePairs({{1.10e9, 1e9}, {1.12e9, 1e9}, {0.70e9, 1e9}, {1.09e9, 1e9}});
  EXPECT_EQ(v.state, VerdictState::Exploring);
  EXPECT_LT(v.ciLow, 1.0);
  EXPECT_GT(v.ciHigh, 1.0);
}

TEST(Verdict, NoEffectUnderNoiseIsRarelyRevertedAndMostlyInconclusive) {
  // No effect, 10% noise per run. Eight looks each way: a plan with no effect is kept now and then
  // (it costs nothing, and the watch goes on), reverted more rarely (the stricter bound), and most
  // end inconclusive.
  int kept = 0, reverted = 0, inconclusive = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    const Verdict v = judgePairs(pairs(kVerdictMaxPairs, 1.0, 0.10, seed));
    kept += v.state == VerdictState::Kept;
    reverted += v.state == VerdictState::Reverted;
    inconclusive += v.state == VerdictState::Inconclusive;
  }
  EXPECT_LT(kept, 200 * 3 / 10);
  EXPECT_LT(reverted, 200 * 2 / 10);
  EXPECT_LT(reverted, kept);
  EXPECT_GT(inconclusive, 200 / 2);
}

TEST(Verdict, AGainOfFifteenPercentUnderTenPercentNoiseIsKeptWithinTheBound) {
  int kept = 0, reverted = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    const Verdict v = judgePairs(pairs(kVerdictMaxPairs, 1.15, 0.10, seed));
    kept += v.state == VerdictState::Kept;
    reverted += v.state == VerdictState::Reverted;
  }
  EXPECT_GT(kept, 200 * 8 / 10);
  EXPECT_LE(reverted, 2);
}

TEST(Verdict, ALossOfFifteenPercentUnderTenPercentNoiseIsRevertedWithinTheBound) {
  int kept = 0, reverted = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    const Verdict v = judgePairs(pairs(kVerdictMaxPairs, 1 / 1.15, 0.10, seed));
    kept += v.state == VerdictState::Kept;
    reverted += v.state == VerdictState::Reverted;
  }
  EXPECT_GT(reverted, 200 * 8 / 10);
  EXPECT_LE(kept, 2);
}

TEST(Verdict, AKeptPlanStaysKeptUntilItsWindowSaysItLoses) {
  std::vector<RunPair> p = {{1.3e9, 1e9}, {1.31e9, 1e9}, {1.29e9, 1e9}};
  ASSERT_EQ(judgePairs(p).state, VerdictState::Kept);
  // Noisy watch pairs around 1.0: still kept.
  for (double r : {1.0, 0.95, 1.05, 0.98}) p.push_back({r * 1e9, 1e9});
  EXPECT_EQ(judgePairs(p).state, VerdictState::Kept);
  // The driver changed: every new pair is 20% slower; once the window holds mostly those, reverted.
  for (size_t i = 0; i < kVerdictWindow; ++i) p.push_back({0.8e9, 1e9});
  const Verdict v = judgePairs(p);
  EXPECT_EQ(v.state, VerdictState::Reverted);
  EXPECT_EQ(v.windowPairs, kVerdictWindow);
  EXPECT_EQ(v.pairs, p.size());
}

TEST(Verdict, InconclusiveKeepsOptimizingOnlyWhenTheEstimateIsNotSlower) {
  std::vector<RunPair> up, down;
  for (size_t i = 0; i < kVerdictMaxPairs; ++i) {
    const double wobble = i % 2 ? 1.25 : 0.8;  // wide noise, no decision
    up.push_back({wobble * 1.02e9, 1e9});
    down.push_back({wobble * 0.98e9, 1e9});
  }
  const Verdict u = judgePairs(up), d = judgePairs(down);
  ASSERT_EQ(u.state, VerdictState::Inconclusive);
  ASSERT_EQ(d.state, VerdictState::Inconclusive);
  EXPECT_TRUE(u.optimizes());
  EXPECT_FALSE(d.optimizes());
}

TEST(Verdict, ZeroOrMissingTimesAreNoPairs) {
  const Verdict v = judgePairs({{0, 1e9}, {1e9, 0}, {NAN, 1e9}});
  EXPECT_EQ(v.windowPairs, 0u);
  EXPECT_EQ(v.state, VerdictState::Exploring);
  EXPECT_EQ(v.pairedMedian, 0);
}

}  // namespace
}  // namespace hetopt::analyzer
