// SPDX-License-Identifier: MIT
/**
 * @file Before and after for one program (`hetopt report`): the traced run, the untouched runs
 * (control runs of the closed loop, `hetopt run --untouched`: no shim) and the optimized runs,
 * from their run records (contracts/run_record.h, stored by profile_store.h), as a table of
 * kernel, communication and cpu+sync per run; the closed loop's verdict on each plan (from the
 * run ledger); then the predicted saving against the measured one: the paired estimate the
 * verdict is made of (MeasuredSaving). Without pairs nothing is measured, and the report says so;
 * the traced run less its recording cost, which tracing inflates, is then set against the
 * optimized runs as an upper bound, never called measured (a loss is just a loss).
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/closed_loop.h"
#include "analyzer/plots.h"
#include "analyzer/profile.h"
#include "analyzer/profile_store.h"

namespace hetopt::analyzer {

/// "2026-11-25 18:36:12 UTC" for nanoseconds since the epoch: every time a report prints names its
/// zone.
std::string utcTime(uint64_t unixNs);

/// A run record as a stored run: its bar (runBreakdown) labelled by its kind, when it started and
/// its pid.
StoredRun runFromRecord(const AppProfile& profile, const RunRecord& record);

/// The `last` newest runs of each kind, oldest first as `runs` (oldest first) has them.
std::vector<StoredRun> newestRuns(const std::vector<StoredRun>& runs, size_t last);

/// Wall times of one kind of run.
struct WallTimes {
  size_t count = 0;
  double medianNs = 0, minNs = 0, maxNs = 0;
};
WallTimes wallTimes(const std::vector<StoredRun>& runs, RunKind kind);

/// What the optimized runs saved, measured the way the closed loop judges them: the plan the
/// newest run followed, over the pairs its verdict is over (a control run and the optimized run
/// next to it in the run ledger, the newest kVerdictWindow). The saving is their control runs'
/// median times (1 - 1 / the verdict's paired median): its sign is the verdict's median's, and
/// neither the runs shown (`--last`) nor runs far apart in time change it.
struct MeasuredSaving {
  size_t untouchedRecorded = 0, optimizedRecorded = 0;  ///< runs kept in the DB
  size_t last = SIZE_MAX;                               ///< runs shown: the newest of each kind
  WallTimes optimized, untouched;                       ///< of the runs shown
  uint64_t planId = 0;         ///< the plan measured (the newest run's); 0: none
  size_t pairs = 0;            ///< the pairs measured (its verdict's window); 0: nothing measured
  double pairedMedian = 0;     ///< the verdict's paired median speedup (control / optimized)
  double controlMedianNs = 0;  ///< the median of those pairs' control runs
  double savingNs = 0;         ///< controlMedianNs * (1 - 1 / pairedMedian); 0 without pairs
  uint64_t fromUnixNs = 0, toUnixNs = 0;  ///< the first and the last start of those pairs' runs
  /// Without pairs, not a measurement: the traced run less its recording cost, and that less the
  /// median of the optimized runs shown (an upper bound of the saving when positive: tracing
  /// slowed the traced run beyond its recording sample).
  double tracedNs = 0, tracedLessOptimizedNs = 0;
};
/// `runs`: every run kept, oldest first; `last`: how many of each kind are shown.
MeasuredSaving measureSaving(const AppProfile& profile, const std::vector<StoredRun>& runs,
                             const LoopReport& loop, size_t last = SIZE_MAX);

/// The traced run's bar ("traced"), then the untouched runs' and the optimized runs' (each
/// labelled by its kind and time of day), oldest first.
std::vector<BreakdownBar> comparisonBars(const AppProfile& profile,
                                         const std::vector<StoredRun>& runs);
/// The plot's note on their communication: where an optimized run's is a prediction (the traced
/// one less what its pinned transfers are predicted to save), that it is; else empty.
std::string comparisonPlotNote(const AppProfile& profile, const std::vector<StoredRun>& runs);

/// The table (the newest `last` runs of each kind of `runs`, every run kept, oldest first), the
/// closed loop's verdicts and the savings (ends with '\n'). `declineReason`: why `hetopt run`
/// declines the program now (empty: it plans).
std::string formatComparison(const AppProfile& profile, const std::vector<StoredRun>& runs,
                             const LoopReport& loop, const std::string& declineReason = {},
                             size_t last = SIZE_MAX);

/// The same as one JSON object (`hetopt report --json`; fields in its --help): `verdict` is the
/// plan the newest run followed (`state`, `pairs`, `paired_median`, `ci_low`, `ci_high`), null
/// before any planned run; `measured` the saving measured on that plan's pairs.
inline constexpr int kComparisonJsonFormat = 2;
std::string comparisonJson(const AppProfile& profile, const std::vector<StoredRun>& runs,
                           const LoopReport& loop, const std::string& declineReason = {},
                           size_t last = SIZE_MAX);

}  // namespace hetopt::analyzer
