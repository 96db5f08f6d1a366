// SPDX-License-Identifier: MIT
/**
 * @file Constant-time cost functions of size, fitted to measurements: a cost (transfer or
 * allocation time) is modelled per size regime as latency + size * nsPerByte, with at most three
 * regimes, because drivers switch strategies at some size. Each regime keeps a physical meaning
 * (latency >= 0, bandwidth > 0), so the function may jump where the driver switches.
 */
#pragma once
#include <array>
#include <vector>

namespace hetopt::characterize {

struct Segment {
  double sizeLo = 0;     ///< this regime applies from this size (bytes) up to the next one's
  double latencyNs = 0;  ///< >= 0
  double nsPerByte = 0;  ///< >= 0 (1 / bandwidth)
};

/// Small sizes are latency-bound, mid sizes reach the link or copy rate, and drivers switch
/// strategies at some size (pageable H2D on the H200 peaks near 16 GB/s at 4 MiB and falls to
/// 7.6 GB/s at 64 MiB; PoCL copies 1 MiB faster than 512 KiB): hence up to kMaxSegments regimes.
struct CostFunction {
  static constexpr int kMaxSegments = 3;
  std::array<Segment, kMaxSegments> segments{};
  int count = 0;         ///< regimes in use; 0: no fit
  double rmsRelErr = 0;  ///< root-mean-square of (predicted - measured) / measured, outliers aside
  double maxRelErr = 0;  ///< worst |predicted - measured| / measured, outliers aside
  int points = 0;        ///< measurements given
  int outliers = 0;      ///< of them, set aside as too far from the others' curve (FitOptions)
  double sizeMin = 0, sizeMax = 0;  ///< measured size range (evaluation outside it extrapolates)

  bool valid() const { return count > 0; }
  /// Predicted time in ns for `size` bytes: O(kMaxSegments), no allocation.
  double eval(double size) const;
  /// size / eval(size) in GB/s.
  double bandwidthGBs(double size) const;
};

struct FitPoint {
  double size;    ///< bytes
  double timeNs;  ///< > 0
};

struct FitOptions {
  int maxSegments = CostFunction::kMaxSegments;
  int minPointsPerSegment = 3;
  /// A further regime is added only when it cuts the RMS relative error below this fraction of the
  /// current one ...
  double improveFactor = 0.7;
  /// ... and the current fit is worse than this (3% is below run-to-run noise on real machines).
  double goodEnough = 0.03;
  /// A point is set aside as an outlier when the lines through its neighbours (two before, two
  /// after, one on each side) all predict it more than outlierRatio times faster, or all more than
  /// that slower: a median that far from both sides is noise (a driver's fast path taken in some
  /// repetitions), not a regime, which the side of its own regime would predict. At most
  /// maxOutlierFraction of the points are set aside, the farthest first.
  double outlierRatio = 1.5;
  double maxOutlierFraction = 1.0 / 6;
};

/// Fits `points` (any order; sizes may repeat; non-positive times are ignored). An empty input
/// gives an invalid function. Regimes and their breakpoints are chosen by least squares on the
/// log ratio of predicted to measured time (the times span six orders of magnitude, and a point
/// too fast weighs what one too slow does); a regime is only added when it makes the fit clearly
/// better, and outliers are set aside (FitOptions).
CostFunction fitCost(std::vector<FitPoint> points, const FitOptions& options = {});

}  // namespace hetopt::characterize
