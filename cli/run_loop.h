// SPDX-License-Identifier: MIT
/**
 * @file `hetopt run` with the closed loop on (run_loop.cpp; the decisions in
 * analyzer/closed_loop.h): every run of a planned program timed and kept in its run ledger, control
 * runs beside optimized ones until a verdict. Not thread-safe (a command's main thread).
 */
#pragma once
#include <string>

#include "cli/launch.h"
#include "cli/run_decision.h"

namespace hetopt::cli {

/// This run of a planned program: optimized, a control run or untouched, as the ledger says; timed
/// runs are hetopt's children and end in the ledger. `statsAsked`: --stats (always optimized
/// unless the plan was reverted). Returns only on hetopt's own failure.
int runVerified(Launch launch, const PreparedRun& prepared, bool statsAsked);

/// A control run on purpose (`--untouched`): `launch` (no shim) timed, in the ledger beside
/// `planPath` and recorded there. Returns only on hetopt's own failure.
int runControl(const Launch& launch, const std::string& planPath, const std::string& programKey);

/// A run `hetopt run` declined, counted in the program's ledger at `ledgerPath` (for the report).
void ledgerDeclined(const std::string& ledgerPath);

/// The closed loop's view for --dry-run: each plan's verdict and what the next run is.
std::string loopStanding(const PreparedRun& prepared, bool verify, bool statsAsked);

}  // namespace hetopt::cli
