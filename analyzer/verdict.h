// SPDX-License-Identifier: MIT
/**
 * @file Whether a plan pays on the user's own runs: a paired test over control runs (the program
 * untouched) and optimized runs that ran next to each other, on the logs of their wall-time
 * ratios (judgePairs). Pure arithmetic on wall times, no I/O; `closed_loop.h` forms the pairs from
 * the run ledger and decides what the next run is.
 */
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace hetopt::analyzer {

/// Wall times of one control run and the optimized run next to it.
struct RunPair {
  double controlNs = 0, optimizedNs = 0;
};

enum class VerdictState { Exploring, Kept, Reverted, Inconclusive };
/// "exploring", "kept", "reverted", "inconclusive" (the names `hetopt report --json` prints).
const char* verdictStateName(VerdictState state);

/// The first look: fewer pairs never decide.
inline constexpr size_t kVerdictMinPairs = 3;
/// Exploring ends here: without a decision the verdict is inconclusive.
inline constexpr size_t kVerdictMaxPairs = 10;
/// The verdict is taken over the newest pairs only, so that watch pairs after a verdict can
/// overturn it once the machine, the driver or the data changed.
inline constexpr size_t kVerdictWindow = 10;

/// Where the window of a verdict over `pairs` pairs begins: the newest kVerdictWindow.
inline size_t verdictWindowBegin(size_t pairs) {
  return pairs > kVerdictWindow ? pairs - kVerdictWindow : 0;
}
/// Whether a pair counts in a window: both times known (a zero or NaN time is no pair).
inline bool timedPair(const RunPair& p) { return p.controlNs > 0 && p.optimizedNs > 0; }

struct Verdict {
  VerdictState state = VerdictState::Exploring;
  size_t pairs = 0;         ///< every pair the plan has
  size_t windowPairs = 0;   ///< the newest ones the interval is over
  double pairedMedian = 0;  ///< median of control/optimized over the window (> 1: faster); 0: none
  /// One-sided 90% lower and 95% upper bound of the ratio (0 below two pairs).
  double ciLow = 0, ciHigh = 0;
  /// The estimate says optimized runs are not slower (the mean of the logs is >= 0). An
  /// inconclusive plan keeps optimizing when true and runs untouched when false.
  bool favourable = false;
  /// Whether this state optimizes: kept, exploring, inconclusive and favourable.
  bool optimizes() const {
    return state == VerdictState::Kept || state == VerdictState::Exploring ||
           (state == VerdictState::Inconclusive && favourable);
  }
};

/// The verdict after `pairs` (oldest first), replayed pair by pair: a kept or reverted plan stays
/// so until its window says the opposite with confidence, and an inconclusive one stays
/// inconclusive unless its window decides.
///
/// The test: each pair gives d = ln(control / optimized) (> 0: the optimized run was faster). Over
/// the newest kVerdictWindow pairs, Student-t bounds of the mean of d: kept when the one-sided 90%
/// lower bound lies above 0, reverted when the one-sided 95% upper bound lies below (the ratio's
/// bounds are exp() of them: `ci_low`, `ci_high`). Why t on the logs: the pairs cancel the
/// machine's drift; the logs make 0.8x and 1.25x symmetric; at 3-5 pairs the t quantiles (1.89 and
/// 2.92 at 2 degrees of freedom) are wide enough that noise of the kind measured on the GPU VMs
/// (single whole-process runs +-5-25%) leaves a small effect `exploring`, and one wild pair widens
/// the interval instead of deciding. Why the asymmetry: a wrong `kept` is watched (control runs go
/// on and the window can overturn it), a wrong `reverted` gives up a gain for good; on the H200 a
/// 1.1-1.3x program needed 5-6 pairs at 90% two-sided. docs/results.md has the measurements.
Verdict judgePairs(const std::vector<RunPair>& pairs);

/// A speedup ratio for people: two decimals, more where two would print 1.00 for a ratio that is
/// not 1 (a reverted plan's upper bound of 0.998 reads "0.998", not "1.00").
std::string ratioText(double ratio);

/// The one-sided 90% and 95% quantiles of Student's t with `df` degrees of freedom (df >= 1).
double studentT90(size_t df);
double studentT95(size_t df);

}  // namespace hetopt::analyzer
