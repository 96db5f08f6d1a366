// SPDX-License-Identifier: MIT
/** @file Piecewise latency + size/bandwidth least-squares fitting; see fit.h.
 * Least squares per regime, the best segmentation for 1..3 regimes, then fitCost(). */
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
  double cost = kInf;  ///< sum of squared relative residuals
};

// Weighted least squares of y = a + c*x over points [lo, hi) with weights 1/y^2 (relative error),
// subject to a >= 0 and c >= 0: the unconstrained optimum when feasible, else the better of the two
// one-parameter fits (the optimum of this convex problem then lies on that boundary).
LineFit fitLine(const std::vector<FitPoint>& p, size_t lo, size_t hi) {
  // Sizes are scaled to [0, 1] so that the normal equations stay well conditioned at 768 MiB.
  const double xs = p[hi - 1].size > 0 ? p[hi - 1].size : 1.0;
  double sw = 0, swx = 0, swxx = 0, swy = 0, swxy = 0;
  for (size_t i = lo; i < hi; ++i) {
    double w = 1.0 / (p[i].timeNs * p[i].timeNs);
    double x = p[i].size / xs, y = p[i].timeNs;
    sw += w;
    swx += w * x;
    swxx += w * x * x;
    swy += w * y;
    swxy += w * x * y;
  }
  LineFit best;
  auto consider = [&](double a, double cScaled) {
    if (!(a >= 0) || !(cScaled >= 0)) return;
    double cost = 0;
    for (size_t i = lo; i < hi; ++i) {
      double r = (a + cScaled * p[i].size / xs - p[i].timeNs) / p[i].timeNs;
      cost += r * r;
    }
    if (cost < best.cost) best = {a, cScaled / xs, cost};
  };
  double det = sw * swxx - swx * swx;
  if (det > 1e-12 * sw * swxx)
    consider((swy * swxx - swx * swxy) / det, (sw * swxy - swx * swy) / det);
  consider(swy / sw, 0.0);                   // pure latency
  if (swxx > 0) consider(0.0, swxy / swxx);  // pure bandwidth
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
  f.points = static_cast<int>(p.size());
  f.sizeMin = p.front().size;
  f.sizeMax = p.back().size;
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

}  // namespace hetopt::characterize
