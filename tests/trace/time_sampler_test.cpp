// SPDX-License-Identifier: MIT
/** @file Which commands trace mode times (trace/time_sampler.h). */
#include "trace/time_sampler.h"

#include <gtest/gtest.h>

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

TEST(TimeSampler, CensusThenExactlyOnePerBlock) {
  for (uint64_t period : {2u, 3u, 16u, 64u, 100u}) {
    TimeSampler s(period, 12345);
    for (uint64_t i = 0; i < kCensus; ++i) EXPECT_TRUE(s.shouldTime(42)) << i;
    std::set<uint64_t> positions;
    for (int block = 0; block < 400; ++block) {
      uint64_t timed = 0, where = 0;
      for (uint64_t p = 0; p < period; ++p)
        if (s.shouldTime(42)) ++timed, where = p;
      EXPECT_EQ(timed, 1u) << "period " << period << " block " << block;
      positions.insert(where);
    }
    // The position is drawn anew for every block: over 400 blocks each position shows up.
    if (period <= 16) {
      EXPECT_EQ(positions.size(), period) << "period " << period;
    }
  }
}

TEST(TimeSampler, WeightsAreInverseProbabilities) {
  TimeSampler s(16, 4);
  for (uint64_t i = 0; i < kCensus; ++i) EXPECT_EQ(s.weight(9), 1u);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < 16 * 50; ++i) {
    const uint64_t w = s.weight(9);
    EXPECT_TRUE(w == 0 || w == 16) << w;
    sum += w;
  }
  EXPECT_EQ(sum, 16u * 50);  // the timed commands' weights add up to the commands they stand for
}

// The default period on a loop shaped like loop_wkr's (three keys; slow first iterations, then
// times that alternate with the iteration's parity and drift): the weighted estimate of each key's
// total stays within 2% of the truth over 20,000 iterations, and the timed share is ~1/64.
TEST(TimeSampler, DefaultPeriodEstimatesLongLoops) {
  TimeSampler s(TimeSampler::kDefaultPeriod, 77);
  double truth[3] = {}, estimate[3] = {};
  uint64_t timed = 0;
  const int iters = 20000;
  for (int i = 0; i < iters; ++i)
    for (int k = 0; k < 3; ++k) {
      const double ns =
          (i < 10 ? 50000.0 : 4000.0 + 1000.0 * k) * (i % 2 ? 1.3 : 0.8) * (1.0 + i * 1e-5);
      truth[k] += ns;
      const uint64_t w = s.weight(100 + k);
      if (w) ++timed, estimate[k] += ns * static_cast<double>(w);
    }
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(estimate[k] / truth[k], 1.0, 0.02) << "key " << k;
  EXPECT_NEAR(static_cast<double>(timed), 3 * (kCensus + (iters - kCensus) / 64.0), 3.0);
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
  EXPECT_EQ(a, kCensus + 100);
  EXPECT_EQ(b, kCensus + 100);
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
  for (size_t k = 0; k < keys.size(); ++k) EXPECT_EQ(timed[k], kCensus + 100) << "key " << keys[k];
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
  EXPECT_EQ(timed[0] + timed[1], kCensus + (32000 - kCensus) / 16);
  EXPECT_GT(timed[0], 800u);
  EXPECT_GT(timed[1], 800u);
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
