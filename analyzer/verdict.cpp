// SPDX-License-Identifier: MIT
/** @file See verdict.h.
 * One window's verdict (Student-t bounds of the mean log ratio), replayed pair by pair. */
#include "analyzer/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace hetopt::analyzer {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The window's statistics, its state left to the caller.
Verdict windowVerdict(const std::vector<RunPair>& pairs, size_t end) {
  Verdict v;
  v.pairs = end;
  std::vector<double> logs, ratios;
  for (size_t i = verdictWindowBegin(end); i < end; ++i) {
    const RunPair& p = pairs[i];
    if (!timedPair(p)) continue;
    logs.push_back(std::log(p.controlNs / p.optimizedNs));
    ratios.push_back(p.controlNs / p.optimizedNs);
  }
  v.windowPairs = logs.size();
  if (logs.empty()) return v;
  v.pairedMedian = median(ratios);
  double mean = 0;
  for (double d : logs) mean += d;
  mean /= static_cast<double>(logs.size());
  v.favourable = mean >= 0;
  if (logs.size() < 2) return v;
  double ss = 0;
  for (double d : logs) ss += (d - mean) * (d - mean);
  const double se =
      std::sqrt(ss / static_cast<double>(logs.size() - 1) / static_cast<double>(logs.size()));
  v.ciLow = std::exp(mean - studentT90(logs.size() - 1) * se);
  v.ciHigh = std::exp(mean + studentT95(logs.size() - 1) * se);
  return v;
}

}  // namespace

std::string ratioText(double ratio) {
  char buf[32];
  for (int digits = 2; digits <= 4; ++digits) {
    snprintf(buf, sizeof buf, "%.*f", digits, ratio);
    if (ratio == 1 || std::strtod(buf, nullptr) != 1) break;
  }
  return buf;
}

const char* verdictStateName(VerdictState state) {
  switch (state) {
    case VerdictState::Exploring:
      return "exploring";
    case VerdictState::Kept:
      return "kept";
    case VerdictState::Reverted:
      return "reverted";
    case VerdictState::Inconclusive:
      return "inconclusive";
  }
  return "exploring";
}

double studentT90(size_t df) {
  static constexpr double kTable[] = {3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397,
                                      1.383, 1.372, 1.363, 1.356, 1.350, 1.345, 1.341, 1.337,
                                      1.333, 1.330, 1.328, 1.325, 1.323, 1.321, 1.319, 1.318,
                                      1.316, 1.315, 1.314, 1.313, 1.311, 1.310};
  if (df == 0) return INFINITY;
  if (df <= std::size(kTable)) return kTable[df - 1];
  return 1.2816 + 0.89 / static_cast<double>(df);  // within 0.002 of the quantile from 31 on
}

double studentT95(size_t df) {
  static constexpr double kTable[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860,
                                      1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746,
                                      1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
                                      1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  if (df == 0) return INFINITY;
  if (df <= std::size(kTable)) return kTable[df - 1];
  return 1.645 + 1.5 / static_cast<double>(df);  // within 0.002 of the quantile from 31 on
}

Verdict judgePairs(const std::vector<RunPair>& pairs) {
  Verdict v;
  VerdictState state = VerdictState::Exploring;
  for (size_t n = 1; n <= pairs.size(); ++n) {
    v = windowVerdict(pairs, n);
    const bool faster = v.windowPairs >= kVerdictMinPairs && v.ciLow > 1;
    const bool slower = v.windowPairs >= kVerdictMinPairs && v.ciHigh > 0 && v.ciHigh < 1;
    if (faster)
      state = VerdictState::Kept;
    else if (slower)
      state = VerdictState::Reverted;
    else if (state == VerdictState::Exploring && n >= kVerdictMaxPairs)
      state = VerdictState::Inconclusive;
  }
  v.state = state;
  return v;
}

}  // namespace hetopt::analyzer
