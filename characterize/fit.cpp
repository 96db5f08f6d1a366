// SPDX-License-Identifier: MIT
/** @file Piecewise latency + size/bandwidth least-squares fitting; see fit.h.
 * Least squares on log ratios per regime, the best segmentation for 1..3 regimes (fitRegimes),
 * then fitCost() setting outliers aside. */
#include "characterize/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hetopt::characterize {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct LineFit {
  double a = 0;        ///< latency, ns
  double c = 0;        ///< ns per byte
  double cost = kInf;  ///< sum of squared log ratios of prediction to measurement
};

// The squared log ratio is symmetric: a median twice too fast weighs what one twice too slow does.
// A relative error (prediction - measured) / measured is not: it is at most 1 below a point and
// unbounded above, so a few fast points pull a whole regime up to them (fits at 9-10 GB/s over
// 5.7 GB/s points, in Fit.FastMediansDoNotPullAPlateauUp).
double logRatio(double predicted, double measured) {
  return std::log(std::max(predicted, 1e-3) / measured);
}

// Fits y = a + c*x over points [lo, hi) minimizing the squared log ratios, subject to a >= 0 and
// c >= 0. Starts from weighted least squares on the relative error (weights 1/y^2), then takes
// Gauss-Newton steps on the log ratio (each one a weighted least squares with weights 1/p^2 and
// targets p*(1 - ln(p/y)) around the current prediction p). Each step solves the linear problem
// with the constraints: the unconstrained optimum when feasible, else the better of the two
// one-parameter fits; the best line seen so far is kept, so no step makes the fit worse.
LineFit fitLine(const std::vector<FitPoint>& p, size_t lo, size_t hi) {
  // Sizes are scaled to [0, 1] so that the normal equations stay well conditioned at 768 MiB.
  const double xs = p[hi - 1].size > 0 ? p[hi - 1].size : 1.0;
  LineFit best;
  auto consider = [&](double a, double cScaled) {
    if (!(a >= 0) || !(cScaled >= 0)) return false;
    double cost = 0;
    for (size_t i = lo; i < hi; ++i) {
      double r = logRatio(a + cScaled * p[i].size / xs, p[i].timeNs);
      cost += r * r;
    }
    if (!(cost < best.cost)) return false;
    best = {a, cScaled / xs, cost};
    return true;
  };
  // One weighted linear least squares of targets z with weights w; true when it improved `best`.
  auto solve = [&](auto&& weightAndTarget) {
    double sw = 0, swx = 0, swxx = 0, swz = 0, swxz = 0;
    for (size_t i = lo; i < hi; ++i) {
      auto [w, z] = weightAndTarget(i);
      double x = p[i].size / xs;
      sw += w;
      swx += w * x;
      swxx += w * x * x;
      swz += w * z;
      swxz += w * x * z;
    }
    bool improved = false;
    double det = sw * swxx - swx * swx;
    if (det > 1e-12 * sw * swxx)
      improved |= consider((swz * swxx - swx * swxz) / det, (sw * swxz - swx * swz) / det);
    improved |= consider(swz / sw, 0.0);                   // pure latency
    if (swxx > 0) improved |= consider(0.0, swxz / swxx);  // pure bandwidth
    return improved;
  };
  solve([&](size_t i) {
    const double y = p[i].timeNs;
    return std::pair{1.0 / (y * y), y};
  });
  constexpr int kSteps = 8;
  for (int step = 0; step < kSteps; ++step) {
    const LineFit at = best;
    bool improved = solve([&](size_t i) {
      const double pred = std::max(at.a + at.c * p[i].size, 1e-3);
      return std::pair{1.0 / (pred * pred), pred * (1 - std::log(pred / p[i].timeNs))};
    });
    if (!improved) break;
  }
  return best;
}

struct Segmentation {
  size_t starts[CostFunction::kMaxSegments] = {};  ///< index of each regime's first point
  LineFit lines[CostFunction::kMaxSegments];
  int count = 0;
  double cost = kInf;
};

// Best split of the points into exactly k contiguous regimes of at least m points each, never
// between equal sizes. Exhaustive: n is a few dozen sizes, k at most 3.
Segmentation bestSegmentation(const std::vector<FitPoint>& p, int k, size_t m) {
  const size_t n = p.size();
  Segmentation best, cur;
  cur.count = k;
  auto evaluate = [&]() {
    double cost = 0;
    for (int j = 0; j < k; ++j) {
      size_t lo = cur.starts[j], hi = j + 1 < k ? cur.starts[j + 1] : n;
      cur.lines[j] = fitLine(p, lo, hi);
      cost += cur.lines[j].cost;
      if (cost >= best.cost) return;
    }
    cur.cost = cost;
    best = cur;
  };
  auto recurse = [&](auto&& self, int j) -> void {
    if (j == k) {
      evaluate();
      return;
    }
    // Regime j starts at least m points after regime j-1; m points remain for each later one.
    size_t remaining = static_cast<size_t>(k - j) * m;
    for (size_t s = cur.starts[j - 1] + m; s + remaining <= n; ++s) {
      if (p[s - 1].size == p[s].size) continue;
      cur.starts[j] = s;
      self(self, j + 1);
    }
  };
  cur.starts[0] = 0;
  recurse(recurse, 1);
  return best;
}

CostFunction toFunction(const std::vector<FitPoint>& p, const Segmentation& s) {
  CostFunction f;
  f.count = s.count;
  for (int j = 0; j < s.count; ++j) {
    Segment& seg = f.segments[j];
    seg.latencyNs = s.lines[j].a;
    seg.nsPerByte = s.lines[j].c;
    if (j == 0) continue;
    // The boundary is where the two lines cross when that lies between the neighbouring
    // measurements (no jump there), else the geometric middle of them.
    double xa = p[s.starts[j] - 1].size, xb = p[s.starts[j]].size;
    const Segment& prev = f.segments[j - 1];
    double dc = prev.nsPerByte - seg.nsPerByte;
    double cross = dc != 0 ? (seg.latencyNs - prev.latencyNs) / dc : -1;
    seg.sizeLo = (cross >= xa && cross <= xb) ? cross : std::sqrt(xa * xb);
  }
  double sum = 0, worst = 0;
  for (const FitPoint& q : p) {
    double r = std::fabs(f.eval(q.size) - q.timeNs) / q.timeNs;
    sum += r * r;
    worst = std::max(worst, r);
  }
  f.rmsRelErr = std::sqrt(sum / p.size());
  f.maxRelErr = worst;
  return f;
}

// Which of the sorted points are outliers (FitOptions): each is judged against the lines, in log
// time over log size, through the two points before it, the two after it and the two around it.
// An outlier is off every one of them by more than outlierRatio, on the same side. A regime change
// is not: the side of the point's own regime predicts it. At most maxOutlierFraction of the points
// are outliers, the farthest first; the first and last points, with one line each, never are.
std::vector<bool> findOutliers(const std::vector<FitPoint>& p, const FitOptions& options) {
  const size_t n = p.size();
  std::vector<bool> out(n, false);
  auto u = [&](size_t i) { return std::log(std::max(p[i].size, 1.0)); };
  auto v = [&](size_t i) { return std::log(p[i].timeNs); };
  // The line through points j and k at point i (their mean when their sizes are equal).
  auto predict = [&](size_t i, size_t j, size_t k) {
    if (u(j) == u(k)) return (v(j) + v(k)) / 2;
    return v(j) + (v(k) - v(j)) * (u(i) - u(j)) / (u(k) - u(j));
  };
  std::vector<std::pair<double, size_t>> candidates;  // (smallest miss, index)
  const double limit = std::log(options.outlierRatio);
  for (size_t i = 1; i + 1 < n; ++i) {
    std::vector<double> misses;  // measured minus predicted, log time
    if (i >= 2) misses.push_back(v(i) - predict(i, i - 2, i - 1));
    misses.push_back(v(i) - predict(i, i - 1, i + 1));
    if (i + 2 < n) misses.push_back(v(i) - predict(i, i + 1, i + 2));
    if (misses.size() < 2) continue;
    const bool slower = misses[0] > 0;
    double smallest = std::numeric_limits<double>::infinity();
    for (double m : misses) {
      if ((m > 0) != slower) smallest = 0;
      smallest = std::min(smallest, std::fabs(m));
    }
    if (smallest > limit) candidates.push_back({smallest, i});
  }
  std::sort(candidates.rbegin(), candidates.rend());
  const size_t cap =
      static_cast<size_t>(std::max(0.0, options.maxOutlierFraction) * static_cast<double>(n));
  for (size_t c = 0; c < std::min(cap, candidates.size()); ++c) out[candidates[c].second] = true;
  return out;
}

// The best function of 1..maxSegments regimes for sorted points; a regime is added only when it
// makes the fit clearly better (FitOptions).
CostFunction fitRegimes(const std::vector<FitPoint>& points, const FitOptions& options) {
  const size_t m = static_cast<size_t>(std::max(1, options.minPointsPerSegment));
  const int maxK = std::clamp(options.maxSegments, 1, CostFunction::kMaxSegments);
  Segmentation one;
  one.count = 1;
  one.lines[0] = fitLine(points, 0, points.size());
  one.cost = one.lines[0].cost;
  CostFunction chosen = toFunction(points, one);
  for (int k = 2; k <= maxK; ++k) {
    if (chosen.rmsRelErr <= options.goodEnough) break;
    if (points.size() < static_cast<size_t>(k) * m) break;
    Segmentation s = bestSegmentation(points, k, m);
    if (!std::isfinite(s.cost)) continue;
    CostFunction candidate = toFunction(points, s);
    if (candidate.rmsRelErr < options.improveFactor * chosen.rmsRelErr) chosen = candidate;
  }
  return chosen;
}

}  // namespace

double CostFunction::eval(double size) const {
  if (count == 0) return 0;
  int j = 0;
  while (j + 1 < count && size >= segments[j + 1].sizeLo) ++j;
  double t = segments[j].latencyNs + segments[j].nsPerByte * size;
  // A regime of zero latency extrapolated to size 0; never predict zero time.
  return t > 1e-3 ? t : 1e-3;
}

double CostFunction::bandwidthGBs(double size) const {
  double t = eval(size);
  return t > 0 ? size / t : 0;  // bytes per ns == GB/s
}

CostFunction fitCost(std::vector<FitPoint> points, const FitOptions& options) {
  points.erase(std::remove_if(points.begin(), points.end(),
                              [](const FitPoint& q) {
                                return !(q.timeNs > 0) || !std::isfinite(q.timeNs) ||
                                       !(q.size >= 0) || !std::isfinite(q.size);
                              }),
               points.end());
  if (points.empty()) return {};
  std::stable_sort(points.begin(), points.end(),
                   [](const FitPoint& a, const FitPoint& b) { return a.size < b.size; });
  const std::vector<bool> outlier = findOutliers(points, options);
  std::vector<FitPoint> kept;
  for (size_t i = 0; i < points.size(); ++i)
    if (!outlier[i]) kept.push_back(points[i]);
  CostFunction chosen = fitRegimes(kept, options);
  chosen.points = static_cast<int>(points.size());
  chosen.outliers = static_cast<int>(points.size() - kept.size());
  chosen.sizeMin = points.front().size;
  chosen.sizeMax = points.back().size;
  return chosen;
}

}  // namespace hetopt::characterize
