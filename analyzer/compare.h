// SPDX-License-Identifier: MIT
/**
 * @file Before and after for one program (`hetopt report`): the traced run against the optimized
 * runs the shim recorded (contracts/run_record.h, stored by profile_store.h), as a table of kernel,
 * communication and cpu+sync per run, then the predicted saving against the measured one.
 */
#pragma once
#include <string>
#include <vector>

#include "analyzer/plots.h"
#include "analyzer/profile.h"
#include "analyzer/profile_store.h"

namespace hetopt::analyzer {

/// "2026-11-25 18:36:12" (UTC) for nanoseconds since the epoch.
std::string utcTime(uint64_t unixNs);

/// A run record as a stored run: its bar (runBreakdown) labelled by when it started and its pid.
StoredRun runFromRecord(const AppProfile& profile, const RunRecord& record);

/// The traced run's bar ("traced"), then one per run (labelled by its start time).
std::vector<BreakdownBar> comparisonBars(const AppProfile& profile, const std::vector<StoredRun>& runs);

/// The table and the savings (ends with '\n'). The measured saving of a run is the traced run's
/// wall time less what recording itself cost (the trace's sample) less the run's wall time.
std::string formatComparison(const AppProfile& profile, const std::vector<StoredRun>& runs);

}  // namespace hetopt::analyzer
