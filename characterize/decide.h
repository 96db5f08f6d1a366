// SPDX-License-Identifier: MIT
/**
 * @file From samples to fitted curves, and from curves to the decision table: for each size range,
 * which policy moves data fastest and whether its allocation needs a pool. Pinning holds a scarce
 * resource and costs allocation time, so standard memory wins unless a pinned policy beats it by a
 * margin (DecisionRules), and a pool is chosen only where one transfer cannot repay the allocation.
 */
#pragma once
#include <string>
#include <vector>

#include "characterize/model.h"

namespace hetopt::characterize {

/// Fits every (measure, policy, concurrency) group of run.samples into run.fits (replacing them).
void fitSamples(CharacterizationRun* run);

struct DecisionRules {
  /// Pinning holds a scarce resource and costs allocation time: a policy must beat another by more
  /// than this to count as faster (20% is also above the run-to-run noise of a shared CPU device).
  double similarRel = 0.20;
  double similarAbsNs = 500;  ///< differences below this are noise for any size
  uint64_t minSize = 1024;    ///< first range starts at 0, its reference point here
  uint64_t maxSize = 0;       ///< last range ends at infinity; 0: largest measured transfer size
};

/// The decision table for H2D, D2H and round trips at concurrency 1, from run.fits and
/// run.policies. Adjacent ranges with the same choice are merged. Empty when standard has no fit.
/// The rules:
///  1. Only policies usable at the size count (available, or partial up to their largest size).
///  2. Transfer times within `similarRel` (or `similarAbsNs`) of the fastest are "similar".
///  3. Among similar ones, prefer in this order: standard (nothing to do, nothing pinned); a policy
///     that needs no pool, i.e. whose extra allocation+free cost over malloc is repaid by the time
///     one transfer saves; a pool policy whose allocation can overlap OpenCL context creation; any
///     other. Within one class the cheaper wins (transfer time, plus the allocation for direct
///     ones). The result must also beat standard by the margin, else standard it is.
///  4. The allocation mode is Direct when one transfer repays the allocation, else Pool. One
///     transfer per allocation is the worst case; the analyzer, which knows a site's transfer
///     count, may be less strict.
///  5. Sizes are judged per octave, on the fitted curves. A pinned choice must also show in the
///     medians measured inside the octave (a noisy point can bend one policy's fit), and a
///     different choice at one octave between two that agree is taken for noise and follows its
///     neighbours.
std::vector<Decision> decide(const CharacterizationRun& run, const DecisionRules& rules = {});

/// The table as printed by `hetopt characterize` and `--show` (several lines, ends with '\n').
std::string formatDecisionTable(const CharacterizationRun& run);

/// Measured medians in the shape of the H200 reference measurements, one row per measured policy:
/// H2D/D2H GB/s at 64 MiB (or the largest size below it), aggregate GB/s of 4 concurrent transfers
/// at the largest size, allocation time at 64 and 256 MiB. For comparing machines and driver
/// versions.
std::string formatMeasuredSummary(const CharacterizationRun& run);

/// One line per policy with its availability and, for the unavailable ones, why.
std::string formatPolicySummary(const CharacterizationRun& run);

}  // namespace hetopt::characterize
