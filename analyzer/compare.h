// SPDX-License-Identifier: MIT
/**
 * @file Before and after for one program (`hetopt report`): the traced run, the untouched runs
 * (control runs of the closed loop, `hetopt run --untouched`: no shim) and the optimized runs,
 * from their run records (contracts/run_record.h, stored by profile_store.h), as a table of
 * kernel, communication and cpu+sync per run; the closed loop's verdict on each plan (from the
 * run ledger); then the predicted saving against the measured one. Measured against the untouched
 * runs when there are any; else against the traced run less its recording cost, which tracing
 * inflates: a saving measured so is an upper bound, and said to be one (a loss is just a loss).
 */
#pragma once
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

/// Wall times of one kind of run.
struct WallTimes {
  size_t count = 0;
  double medianNs = 0, minNs = 0, maxNs = 0;
};
WallTimes wallTimes(const std::vector<StoredRun>& runs, RunKind kind);

/// What the optimized runs saved, measured.
struct MeasuredSaving {
  WallTimes optimized, untouched;
  /// No untouched run: the baseline is the traced run less its recording cost, and the saving an
  /// upper bound of what hetopt saves against a plain run.
  bool upperBound = true;
  double baselineNs = 0;  ///< untouched median, else the traced run less its recording cost
  double savingNs = 0;    ///< baselineNs - the optimized median (0 without optimized runs)
  /// Control (untouched) minus optimized wall time of each pair the run ledger holds: a control
  /// run and the optimized run next to it, both timed by hetopt (closed_loop.h's pairRuns).
  std::vector<double> pairedNs;
};
MeasuredSaving measureSaving(const AppProfile& profile, const std::vector<StoredRun>& runs,
                             const LoopReport& loop);

/// The traced run's bar ("traced"), then the untouched runs' and the optimized runs' (each
/// labelled by its kind and time of day), oldest first.
std::vector<BreakdownBar> comparisonBars(const AppProfile& profile,
                                         const std::vector<StoredRun>& runs);

/// The table, the closed loop's verdicts and the savings (ends with '\n'). `declineReason`: why
/// `hetopt run` declines the program now (empty: it plans).
std::string formatComparison(const AppProfile& profile, const std::vector<StoredRun>& runs,
                             const LoopReport& loop, const std::string& declineReason = {});

/// The same as one JSON object (`hetopt report --json`; fields in its --help): `verdict` is the
/// plan the newest run followed (`state`, `pairs`, `paired_median`, `ci_low`, `ci_high`), null
/// before any planned run.
std::string comparisonJson(const AppProfile& profile, const std::vector<StoredRun>& runs,
                           const LoopReport& loop, const std::string& declineReason = {});

}  // namespace hetopt::analyzer
