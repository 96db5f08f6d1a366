// SPDX-License-Identifier: MIT
/** @file Curve fitting on synthetic data with known parameters. */
#include "characterize/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hetopt::characterize {
namespace {

constexpr double kKiB = 1024, kMiB = 1024 * 1024;

// Sizes 1 KiB .. 2^maxLog2 bytes, doubling, as the benchmarks measure them.
template <typename F>
std::vector<FitPoint> sample(F f, int maxLog2 = 28) {
  std::vector<FitPoint> pts;
  for (int e = 10; e <= maxLog2; ++e) {
    double s = std::ldexp(1.0, e);
    pts.push_back({s, f(s)});
  }
  return pts;
}

TEST(Fit, OneRegimeRecoversLatencyAndBandwidth) {
  // 8 us + size / 12 GB/s.
  CostFunction f = fitCost(sample([](double s) { return 8000 + s / 12.0; }));
  ASSERT_EQ(f.count, 1);
  EXPECT_NEAR(f.segments[0].latencyNs, 8000, 8000 * 1e-6);
  EXPECT_NEAR(1 / f.segments[0].nsPerByte, 12.0, 12.0 * 1e-6);
  EXPECT_LT(f.rmsRelErr, 1e-9);
  EXPECT_EQ(f.points, 19);
  EXPECT_DOUBLE_EQ(f.sizeMin, kKiB);
  EXPECT_DOUBLE_EQ(f.sizeMax, 256 * kMiB);
  EXPECT_NEAR(f.bandwidthGBs(256 * kMiB), 12.0, 0.01);
}

TEST(Fit, PageableLikeTwoRegimesFindTheSwitch) {
  // NVIDIA-pageable-like: 10 us + size/16 GB/s up to 4 MiB, then 50 us + size/7.6 GB/s.
  auto truth = [](double s) { return s <= 4 * kMiB ? 10000 + s / 16.0 : 50000 + s / 7.6; };
  CostFunction f = fitCost(sample(truth));
  ASSERT_EQ(f.count, 2);
  EXPECT_NEAR(f.segments[0].latencyNs, 10000, 1);
  EXPECT_NEAR(1 / f.segments[0].nsPerByte, 16.0, 1e-3);
  EXPECT_NEAR(f.segments[1].latencyNs, 50000, 5);
  EXPECT_NEAR(1 / f.segments[1].nsPerByte, 7.6, 1e-3);
  // The switch lies between the last size of the first regime and the first of the second.
  EXPECT_GT(f.segments[1].sizeLo, 4 * kMiB);
  EXPECT_LT(f.segments[1].sizeLo, 8 * kMiB);
  EXPECT_LT(f.rmsRelErr, 1e-6);
  for (double s : {1 * kKiB, 300 * kKiB, 4 * kMiB, 8 * kMiB, 100 * kMiB})
    EXPECT_NEAR(f.eval(s), truth(s), truth(s) * 1e-4) << s;
}

TEST(Fit, ThreeRegimes) {
  // Latency-bound, then a fast copy, then a slower one (cache -> memory).
  auto truth = [](double s) {
    if (s < 64 * kKiB) return 20000 + s / 2.0;
    if (s < 8 * kMiB) return 5000 + s / 30.0;
    return s / 9.0;
  };
  CostFunction f = fitCost(sample(truth));
  ASSERT_EQ(f.count, 3);
  EXPECT_LT(f.rmsRelErr, 1e-6);
  EXPECT_NEAR(1 / f.segments[1].nsPerByte, 30.0, 1e-3);
  EXPECT_NEAR(1 / f.segments[2].nsPerByte, 9.0, 1e-3);
  EXPECT_NEAR(f.segments[2].latencyNs, 0, 1e-3);
}

TEST(Fit, NoisyDataKeepsOneRegimeAndReportsTheNoise) {
  // +-3% alternating noise on a one-regime truth: extra regimes must not chase it.
  std::vector<FitPoint> pts = sample([](double s) { return 3000 + s / 20.0; });
  for (size_t i = 0; i < pts.size(); ++i) pts[i].timeNs *= (i % 2 ? 1.03 : 0.97);
  CostFunction f = fitCost(pts);
  EXPECT_EQ(f.count, 1);
  EXPECT_NEAR(f.rmsRelErr, 0.03, 0.005);
  EXPECT_NEAR(f.maxRelErr, 0.03, 0.01);
  EXPECT_NEAR(1 / f.segments[0].nsPerByte, 20.0, 20.0 * 0.05);
  EXPECT_NEAR(f.segments[0].latencyNs, 3000, 3000 * 0.05);
}

// A pageable PCIe transfer as a user's machine measured it: ~10 us of latency, a 5.7 GB/s plateau
// up to the largest size, +-3% noise, and three sizes whose medians came out at 14 GB/s (a fast
// path the driver took in most of their repetitions).
std::vector<FitPoint> plateauWithFastMedians() {
  std::vector<FitPoint> pts = sample([](double s) { return 10000 + s / 5.7; }, 27);
  pts.push_back({148 * kMiB, 10000 + 148 * kMiB / 5.7});
  for (size_t i = 0; i < pts.size(); ++i) {
    const double s = pts[i].size;
    if (s == 2 * kMiB || s == 16 * kMiB || s == 128 * kMiB)
      pts[i].timeNs = 10000 + s / 14.0;
    else
      pts[i].timeNs *= (i % 3 == 0 ? 1.03 : i % 3 == 1 ? 0.97 : 1.0);
  }
  return pts;
}

TEST(Fit, FastMediansDoNotPullAPlateauUp) {
  std::vector<FitPoint> pts = plateauWithFastMedians();
  CostFunction f = fitCost(pts);
  EXPECT_EQ(f.points, 19);
  EXPECT_EQ(f.outliers, 3);
  EXPECT_LT(f.rmsRelErr, 0.05);
  for (double s : {4 * kMiB, 32 * kMiB, 64 * kMiB, 148 * kMiB})
    EXPECT_NEAR(f.bandwidthGBs(s), 5.7 * s / (s + 10000 * 5.7), 0.3) << s;
  EXPECT_NEAR(f.eval(kKiB), 10000, 500);
}

TEST(Fit, ARegimeIsNotAnOutlier) {
  // Three sizes at twice the bandwidth are a regime (the fit follows them), two are not.
  auto truth = [](double s) { return 10000 + s / (s >= 2 * kMiB && s <= 8 * kMiB ? 12.0 : 6.0); };
  CostFunction f = fitCost(sample(truth));
  EXPECT_EQ(f.outliers, 0);
  EXPECT_NEAR(f.bandwidthGBs(4 * kMiB), 12.0 * 4 * kMiB / (4 * kMiB + 10000 * 12.0), 0.3);
  // A switch between two regimes is no outlier either, on either side of it.
  auto step = [](double s) { return s <= 4 * kMiB ? 10000 + s / 16.0 : 50000 + s / 7.6; };
  EXPECT_EQ(fitCost(sample(step)).outliers, 0);
}

TEST(Fit, ConstraintsKeepLatencyAndBandwidthPhysical) {
  // Times that shrink with size cannot give a negative bandwidth: the fit is a constant.
  CostFunction f = fitCost({{1024, 9000}, {4096, 8000}, {16384, 7000}});
  ASSERT_EQ(f.count, 1);
  EXPECT_GE(f.segments[0].latencyNs, 0);
  EXPECT_GE(f.segments[0].nsPerByte, 0);
  // Pure bandwidth data gives zero latency, not a negative one.
  CostFunction g = fitCost(sample([](double s) { return s / 5.0; }));
  EXPECT_GE(g.segments[0].latencyNs, 0);
  EXPECT_LT(g.segments[0].latencyNs, 1e-3);
  EXPECT_NEAR(g.bandwidthGBs(kMiB), 5.0, 1e-6);
}

TEST(Fit, DegenerateInputs) {
  EXPECT_FALSE(fitCost({}).valid());
  EXPECT_EQ(fitCost({}).eval(1000), 0);
  // Non-positive and non-finite times are ignored.
  CostFunction f = fitCost({{1024, -5}, {2048, 0}, {4096, NAN}, {8192, 1000}});
  ASSERT_TRUE(f.valid());
  EXPECT_EQ(f.points, 1);
  EXPECT_NEAR(f.eval(8192), 1000, 1e-6);
  // Unsorted input with repeated sizes is fine.
  CostFunction g = fitCost({{4096, 5000}, {1024, 2000}, {4096, 5000}, {2048, 3000}});
  EXPECT_NEAR(g.eval(3072), 4000, 1);
  // A prediction is never zero or negative, even far below the measured range.
  EXPECT_GT(g.eval(0), 0);
}

TEST(Fit, OptionsLimitRegimes) {
  auto truth = [](double s) { return s <= 4 * kMiB ? 10000 + s / 16.0 : 50000 + s / 7.6; };
  FitOptions one;
  one.maxSegments = 1;
  CostFunction f = fitCost(sample(truth), one);
  EXPECT_EQ(f.count, 1);
  EXPECT_GT(f.rmsRelErr, 0.05);  // a single line cannot follow the switch
}

}  // namespace
}  // namespace hetopt::characterize
