// SPDX-License-Identifier: MIT
/** @file Which commands trace mode times (trace/time_sampler.h). */
#include "trace/time_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "common/options.h"

namespace hetopt::trace {
namespace {

constexpr uint64_t kCensus = TimeSampler::kCensus;

uint64_t timedOf(TimeSampler& s, uint64_t key, uint64_t calls) {
  uint64_t timed = 0;
  for (uint64_t i = 0; i < calls; ++i) timed += s.shouldTime(key);
  return timed;
}

TEST(TimeSampler, PeriodOneTimesEveryCommand) {
  TimeSampler s(1);
  EXPECT_EQ(timedOf(s, 7, 10000), 10000u);
}

// After the census, exactly one command per block is timed, with the block's length as its
// weight; a period holds for kBlocksPerStep blocks, then doubles, up to kMaxGrowth x the base.
TEST(TimeSampler, CensusThenExactlyOnePerGrowingBlock) {
  for (uint64_t period : {2u, 3u, 16u, 64u, 100u}) {
    TimeSampler s(period, 12345);
    for (uint64_t i = 0; i < kCensus; ++i) EXPECT_EQ(s.weight(42), 1u) << i;
    std::set<uint64_t> firstPositions;
    uint64_t length = period;
    for (int block = 0; block < 300; ++block) {
      if (block > 0 && block % TimeSampler::kBlocksPerStep == 0 &&
          length < period * TimeSampler::kMaxGrowth)
        length *= 2;
      uint64_t timed = 0, where = 0;
      for (uint64_t p = 0; p < length; ++p)
        if (const uint64_t w = s.weight(42)) {
          EXPECT_EQ(w, length) << "period " << period << " block " << block;
          ++timed, where = p;
        }
      EXPECT_EQ(timed, 1u) << "period " << period << " block " << block;
      if (block < static_cast<int>(TimeSampler::kBlocksPerStep)) firstPositions.insert(where);
    }
    EXPECT_EQ(length, period * TimeSampler::kMaxGrowth) << "period " << period;
    // The position is drawn anew for every block: over 64 blocks of 2 or 3 each one shows up.
    if (period <= 3) {
      EXPECT_EQ(firstPositions.size(), period) << "period " << period;
    }
  }
}

TEST(TimeSampler, TimedInWholeBlocksFollowsTheSchedule) {
  for (uint64_t period : {2u, 16u, 64u})
    for (uint64_t commands : {10u, 32u, 33u, 1000u, 5000u, 20000u, 200000u}) {
      TimeSampler s(period, 3);
      const uint64_t timed = timedOf(s, 8, commands);
      const uint64_t whole = TimeSampler::timedInWholeBlocks(period, commands);
      EXPECT_GE(timed, whole) << period << " " << commands;
      EXPECT_LE(timed, whole + 1) << period << " " << commands;
    }
  // loop_wkr's 20,000 iterations at the default: 32 + 158 timed per key, not 32 + 312.
  EXPECT_EQ(TimeSampler::timedInWholeBlocks(64, 20000), kCensus + 64 + 64 + 30);
}

TEST(TimeSampler, WeightsAreInverseProbabilities) {
  TimeSampler s(16, 4);
  for (uint64_t i = 0; i < kCensus; ++i) EXPECT_EQ(s.weight(9), 1u);
  uint64_t sum = 0;
  // 64 blocks of 16, then 64 of 32: whole blocks only.
  const uint64_t commands = 16 * 64 + 32 * 64;
  for (uint64_t i = 0; i < commands; ++i) {
    const uint64_t w = s.weight(9);
    EXPECT_TRUE(w == 0 || w == (i < 16 * 64 ? 16u : 32u)) << i << " " << w;
    sum += w;
  }
  EXPECT_EQ(sum, commands);  // the timed commands' weights add up to the commands they stand for
}

// The default period on a loop shaped like loop_wkr's (three keys; slow first iterations, then
// times that alternate with the iteration's parity and drift: a spread of +-25%, wider than real
// loops'): over 200 seeds, the weighted estimate of the worst key's total is within 3.5% of the
// truth in the median run, 6% at the 90th percentile and 10% at worst (measured: 2.9%, 4.7%, 8.4%;
// timing one in 64 for good, 312 commands a key against 158, gave 1.7%, 3.1%, 4.6%), with the
// schedule's timed count.
TEST(TimeSampler, DefaultPeriodEstimatesLongLoops) {
  const int iters = 20000;
  std::vector<double> worstKey;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    TimeSampler s(TimeSampler::kDefaultPeriod, seed * 7919);
    double truth[3] = {}, estimate[3] = {};
    uint64_t timed = 0;
    for (int i = 0; i < iters; ++i)
      for (int k = 0; k < 3; ++k) {
        const double ns =
            (i < 10 ? 50000.0 : 4000.0 + 1000.0 * k) * (i % 2 ? 1.3 : 0.8) * (1.0 + i * 1e-5);
        truth[k] += ns;
        const uint64_t w = s.weight(100 + k);
        if (w) ++timed, estimate[k] += ns * static_cast<double>(w);
      }
    double worst = 0;
    for (int k = 0; k < 3; ++k) worst = std::max(worst, std::fabs(estimate[k] / truth[k] - 1.0));
    worstKey.push_back(worst);
    const uint64_t whole = TimeSampler::timedInWholeBlocks(TimeSampler::kDefaultPeriod, iters);
    EXPECT_GE(timed, 3 * whole) << "seed " << seed;
    EXPECT_LE(timed, 3 * whole + 3) << "seed " << seed;
  }
  std::sort(worstKey.begin(), worstKey.end());
  EXPECT_LT(worstKey[worstKey.size() / 2], 0.035);
  EXPECT_LT(worstKey[worstKey.size() * 9 / 10], 0.06);
  EXPECT_LT(worstKey.back(), 0.10);
}

// The shim reads HETOPT_TIME_SAMPLE with options.def's default; the sampler's own must agree.
TEST(TimeSampler, DefaultPeriodIsTheOptionsDefault) {
  EXPECT_EQ(std::to_string(TimeSampler::kDefaultPeriod),
            hetopt::optionInfo(hetopt::Option::TIME_SAMPLE).defaultValue);
}

TEST(TimeSampler, KeysAreCountedApart) {
  TimeSampler s(16, 1);
  // Interleaved, each key still gets its own census and its own blocks.
  uint64_t a = 0, b = 0;
  for (int i = 0; i < 32 + 16 * 100; ++i) {
    a += s.shouldTime(TimeSampler::combine(1, 0x1000));
    b += s.shouldTime(TimeSampler::combine(1, 0x2000));
  }
  const uint64_t whole = TimeSampler::timedInWholeBlocks(16, 32 + 16 * 100);
  EXPECT_GE(a, whole);
  EXPECT_LE(a, whole + 1);
  EXPECT_GE(b, whole);
  EXPECT_LE(b, whole + 1);
}

// Keys of one set (object handles differ every run, so a loop's keys share one now and then):
// four of them interleaved (a loop body's write, kernel, read and one more) are still sampled
// apart. A direct-mapped table timed every command of two such keys, for good (a 5,000-iteration
// trace came out with no sampling).
TEST(TimeSampler, KeysOfOneSetAreCountedApart) {
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < 4; ++k)
    if (TimeSampler::setOf(k) == TimeSampler::setOf(1)) keys.push_back(k);
  TimeSampler s(16, 1);
  std::vector<uint64_t> timed(keys.size());
  for (int i = 0; i < 32 + 16 * 100; ++i)
    for (size_t k = 0; k < keys.size(); ++k) timed[k] += s.shouldTime(keys[k]);
  const uint64_t whole = TimeSampler::timedInWholeBlocks(16, 32 + 16 * 100);
  for (size_t k = 0; k < keys.size(); ++k) {
    EXPECT_GE(timed[k], whole) << "key " << keys[k];
    EXPECT_LE(timed[k], whole + 1) << "key " << keys[k];
  }
}

TEST(TimeSampler, EveryKeySlotCollisionOnlyAddsTimings) {
  // More keys than slots: evicted keys restart their census, so nothing is timed less than
  // sampling alone would.
  TimeSampler s(16, 3);
  uint64_t timed = 0;
  const uint64_t keys = 4 * TimeSampler::kSlots, rounds = 200;
  for (uint64_t r = 0; r < rounds; ++r)
    for (uint64_t k = 0; k < keys; ++k) timed += s.shouldTime(k + 1);
  EXPECT_GE(timed, keys * (kCensus + (rounds - kCensus) / 16));
}

TEST(TimeSampler, PeriodicPatternsAreNotAliased) {
  // One key whose commands alternate between two loop positions (ping-pong host buffers: two
  // leaves of the same call on the same objects). A fixed stride of 16 would time only one of
  // them; random positions time both about equally.
  TimeSampler s(16, 99);
  uint64_t timed[2] = {};
  for (uint64_t i = 0; i < 32000; ++i) timed[i % 2] += s.shouldTime(5);
  const uint64_t whole = TimeSampler::timedInWholeBlocks(16, 32000);
  EXPECT_GE(timed[0] + timed[1], whole);
  EXPECT_LE(timed[0] + timed[1], whole + 1);
  EXPECT_GT(timed[0], whole / 3);
  EXPECT_GT(timed[1], whole / 3);
}

TEST(TimeSampler, CombineSeparatesFunctionsAndObjects) {
  const uint64_t write = TimeSampler::combine(0, 10), read = TimeSampler::combine(0, 11);
  EXPECT_NE(TimeSampler::combine(write, 0xa0), TimeSampler::combine(read, 0xa0));
  EXPECT_NE(TimeSampler::combine(write, 0xa0), TimeSampler::combine(write, 0xa8));
  EXPECT_NE(TimeSampler::combine(TimeSampler::combine(write, 1), 2),
            TimeSampler::combine(TimeSampler::combine(write, 2), 1));
}

}  // namespace
}  // namespace hetopt::trace
