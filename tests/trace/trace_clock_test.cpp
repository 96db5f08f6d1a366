// SPDX-License-Identifier: MIT
// The trace's clock through the TSC (trace/trace_clock.h): the calibration's arithmetic on made-up
// clocks (continuity, no step back, convergence under a drifting monotonic clock), and the real
// clock on this machine (agreement with clock_gettime, never backwards across threads and
// rescales).
#include "trace/trace_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

namespace {

using hetopt::trace::TscCalibration;
using hetopt::trace::TscClock;
using hetopt::trace::TscScale;

/// A made-up machine: the TSC at `ghz`, CLOCK_MONOTONIC running `ppm` fast against it (NTP's
/// slewing, a TSC frequency known only roughly).
struct FakeClocks {
  double ghz, ppm;
  uint64_t tscAt(uint64_t realNs) const { return 1000000 + static_cast<uint64_t>(realNs * ghz); }
  uint64_t monoAt(uint64_t realNs) const {
    return 5000000000ull + static_cast<uint64_t>(realNs * (1.0 + ppm * 1e-6));
  }
};

int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

int64_t errorAt(const TscScale& s, const FakeClocks& c, uint64_t realNs) {
  return static_cast<int64_t>(s.at(c.tscAt(realNs))) - static_cast<int64_t>(c.monoAt(realNs));
}

TEST(TscCalibration, ScalesOnlyOnceTheFirstPairIsOldEnough) {
  const FakeClocks c{2.5, 0};
  TscCalibration cal;
  TscScale s;
  EXPECT_FALSE(cal.update(c.tscAt(1000), c.monoAt(1000), &s));  // not started
  cal.start(c.tscAt(0), c.monoAt(0));
  EXPECT_FALSE(cal.update(c.tscAt(TscCalibration::kFirstAfterNs / 2),
                          c.monoAt(TscCalibration::kFirstAfterNs / 2), &s));
  EXPECT_FALSE(cal.scaled());
  ASSERT_TRUE(cal.update(c.tscAt(TscCalibration::kFirstAfterNs),
                         c.monoAt(TscCalibration::kFirstAfterNs), &s));
  EXPECT_TRUE(cal.scaled());
  // 2.5 GHz: 0.4 ns a tick; a second later the scale is within a few ns of the clock.
  EXPECT_NEAR(static_cast<double>(s.mult) / 4294967296.0, 0.4, 1e-6);
  EXPECT_LT(magnitude(errorAt(s, c, 1000000000ull)), 1000);
  // A TSC that went backwards (another CPU's, a bad pair) is not used.
  EXPECT_FALSE(cal.update(c.tscAt(0) - 10, c.monoAt(3000000), &s));
}

TEST(TscCalibration, FollowsADriftingClockWithoutEverGoingBack) {
  // The monotonic clock runs 300 ppm fast: the first scale's rate is right, but its later
  // readings would lag; each update slews (at most 100 ppm) or steps forward, never back.
  for (double ppm : {300.0, -80.0, 0.0}) {
    const FakeClocks c{3.1, ppm};
    TscCalibration cal;
    cal.start(c.tscAt(0), c.monoAt(0));
    TscScale s, before;
    bool have = false;
    int64_t worst = 0;
    for (uint64_t t = TscCalibration::kFirstAfterNs; t < 10000000000ull;
         t += TscCalibration::kSlewNs) {
      const uint64_t tsc = c.tscAt(t);
      if (have) before = s;
      if (!cal.update(tsc, c.monoAt(t), &s)) continue;
      if (have) {
        // Continuous where the scales meet (or a step forward), and never backwards after it.
        EXPECT_GE(s.at(tsc), before.at(tsc)) << "ppm " << ppm << " at " << t;
        EXPECT_GE(s.at(tsc + 1000), s.at(tsc));
      }
      have = true;
      if (t > 1000000000ull)
        worst = std::max(worst, magnitude(errorAt(s, c, t + TscCalibration::kSlewNs / 2)));
    }
    // After the first second: within 2 us of CLOCK_MONOTONIC halfway between updates.
    EXPECT_LT(worst, 2000) << "ppm " << ppm;
  }
}

TEST(TscCalibration, StepsForwardWhenFarBehind) {
  FakeClocks c{2.0, 0};
  TscCalibration cal;
  cal.start(c.tscAt(0), c.monoAt(0));
  TscScale s;
  ASSERT_TRUE(cal.update(c.tscAt(TscCalibration::kFirstAfterNs),
                         c.monoAt(TscCalibration::kFirstAfterNs), &s));
  // The monotonic clock jumps 5 ms ahead (a VM paused, say): the scale follows at once.
  const uint64_t t = TscCalibration::kFirstAfterNs + TscCalibration::kSlewNs;
  ASSERT_TRUE(cal.update(c.tscAt(t), c.monoAt(t) + 5000000, &s));
  EXPECT_EQ(s.at(c.tscAt(t)), c.monoAt(t) + 5000000);
}

TEST(TscClock, ReadsTheKernelsClockSourceName) {
  EXPECT_TRUE(TscClock::kernelUsesTsc("tsc\n"));
  EXPECT_TRUE(TscClock::kernelUsesTsc("tsc"));
  EXPECT_FALSE(TscClock::kernelUsesTsc("kvm-clock\n"));
  EXPECT_FALSE(TscClock::kernelUsesTsc("tsc_early\n"));
  EXPECT_FALSE(TscClock::kernelUsesTsc("hpet\n"));
  EXPECT_FALSE(TscClock::kernelUsesTsc(""));
  EXPECT_FALSE(TscClock::kernelUsesTsc(nullptr));
}

TEST(TscClock, NotAllowedMeansTheSystemClock) {
  TscClock::start(false);
  for (int i = 0; i < 10; ++i) TscClock::refresh();
  EXPECT_FALSE(TscClock::scaling());
}

// The real clock: where this machine lets it scale (else it is clock_gettime and these hold
// trivially, which the test says), it agrees with CLOCK_MONOTONIC within 20 us and no thread ever
// sees it go back, while the scale is republished as often as it can be.
TEST(TscClock, AgreesWithTheSystemClockAndNeverGoesBack) {
  const bool possible = TscClock::start(true);
  const uint64_t until = hetopt::clockNs(CLOCK_MONOTONIC) + 300000000ull;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> worstBack{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      uint64_t last = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t now = TscClock::nowNs();
        if (now < last) {
          const int64_t back = static_cast<int64_t>(last - now);
          int64_t seen = worstBack.load();
          while (back > seen && !worstBack.compare_exchange_weak(seen, back)) {
          }
        }
        last = now;
      }
    });
  int64_t worstApart = 0;
  while (hetopt::clockNs(CLOCK_MONOTONIC) < until) {
    TscClock::refresh();
    const uint64_t a = hetopt::clockNs(CLOCK_MONOTONIC);
    const uint64_t t = TscClock::nowNs();
    const uint64_t b = hetopt::clockNs(CLOCK_MONOTONIC);
    if (TscClock::scaling() && b - a < 5000) {
      const int64_t off = t < a   ? static_cast<int64_t>(a - t)
                          : t > b ? static_cast<int64_t>(t - b)
                                  : 0;
      worstApart = std::max(worstApart, off);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  stop = true;
  for (auto& t : readers) t.join();
  if (!possible) {
    EXPECT_FALSE(TscClock::scaling());
    GTEST_LOG_(INFO) << "this machine's clock source is not the TSC: clock_gettime throughout";
  } else {
    EXPECT_TRUE(TscClock::scaling());
  }
  EXPECT_LT(worstApart, 20000) << "ns between the scaled TSC and CLOCK_MONOTONIC";
  // Threads on different CPUs: the kernel keeps their TSCs together (else its clock source would
  // not be the TSC); the scale is continuous, so nothing is seen go back by more than noise.
  EXPECT_LT(worstBack.load(), 1000) << "ns backwards";
  TscClock::stop();
  EXPECT_FALSE(TscClock::scaling());
}

}  // namespace
