// SPDX-License-Identifier: MIT
/**
 * @file The closed loop of `hetopt run`: every run is also a measurement, and a plan stays only
 * while the user's own runs show it pays. From the run ledger (contracts/run_ledger.h) and the
 * plan's chain (the plan, then smaller ones to try when it loses), this decides what the next run
 * is (nextRun) and what each plan's verdict (verdict.h) is. Pure: no I/O, no clock.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/verdict.h"
#include "contracts/run_ledger.h"
#include "contracts/run_record.h"

namespace hetopt::analyzer {

/// After a verdict that keeps a plan, one run in this many is a control run.
inline constexpr size_t kWatchEvery = 10;

/// A control run and the optimized run next to it in the ledger.
struct LedgerPair {
  const LedgerRun* control = nullptr;
  const LedgerRun* optimized = nullptr;
};

/// Pairs neighbouring timed runs of the two kinds, oldest first, each run in at most one pair:
/// two runs pair when no other usable timed run started between them. Runs still running, lost
/// or interrupted pair with nothing and separate nothing.
std::vector<LedgerPair> pairRuns(const Ledger& ledger);

/// The pairs of `planId` (its optimized runs') as wall times, leaving out pairs whose two runs
/// ended differently (those are failures, not timings).
std::vector<RunPair> timingPairs(const std::vector<LedgerPair>& pairs, uint64_t planId);

/// A run of `planId` that ended unlike the runs of the program untouched: an optimized run paired
/// with a control that ended otherwise, or one killed by a signal while no control ended so.
struct Failure {
  bool failed = false;
  const LedgerRun* run = nullptr;
  const LedgerRun* control = nullptr;  ///< the control it is measured against, if any
  std::string what;                    ///< "exit status 1, its control exit status 0"
};
Failure findFailure(const Ledger& ledger, const std::vector<LedgerPair>& pairs, uint64_t planId);

/// What the program looks like under one plan of the chain.
struct PlanStanding {
  uint64_t planId = 0;
  Verdict verdict;
  bool failed = false;  ///< reverted for good (a revert line)
  size_t optimizedRuns = 0;
};

enum class NextKind { Optimized, Control, Untouched };

/// What this run is.
struct NextRun {
  NextKind kind = NextKind::Untouched;
  size_t variant =
      0;  ///< Optimized: which plan of the chain; Control: the plan it is the control of
  std::vector<PlanStanding> chain;  ///< each plan's standing before this run
  /// Why untouched: "reverted", "failed", "exhausted" (every plan lost).
  std::string why;
};

/// Decides this run from the ledger and the chain's plan identities (the plan first, then its
/// smaller variants). `optimizedAsked`: the user asked for what only an optimized run shows
/// (`--stats`): the run is optimized unless the chain is reverted.
///
/// Schedule. While the active plan explores, runs alternate: optimized, control (untouched, timed),
/// optimized, ... so each pair ran under similar conditions. Once kept (or inconclusive with a
/// favourable estimate), one run in kWatchEvery is a control, so that a new driver, new data or a
/// new machine can overturn the verdict. A reverted plan gives way to the next, smaller one in the
/// chain; once every plan of the chain has lost, the program runs untouched. A run that ended
/// unlike its control (another exit status, a signal: it failed, or a wrapper's timeout killed it)
/// reverts its plan at once and for good, and the whole chain with it: the program then runs
/// untouched until it is traced or the machine characterized again (a new plan).
NextRun nextRun(const Ledger& ledger, const std::vector<uint64_t>& chain, bool optimizedAsked);

/// The standings of every plan of the chain, as nextRun sees them.
std::vector<PlanStanding> standings(const Ledger& ledger, const std::vector<LedgerPair>& pairs,
                                    const std::vector<uint64_t>& chain);

/// A timing pair as `hetopt report` shows it: which runs (their ledger lines), when, of which plan,
/// and whether its plan's verdict is over it.
struct LoopPair {
  uint64_t planId = 0;  ///< the optimized run's plan
  uint64_t controlSeq = 0, optimizedSeq = 0;
  uint64_t controlStartedUnixNs = 0, optimizedStartedUnixNs = 0;
  RunPair wall;
  bool inVerdict = false;  ///< in the window its plan's verdict is over (verdictWindowBegin)
};

/// What the ledger says of a program, for `hetopt report`: every plan it ran (oldest first), the
/// one the newest run followed, the pairs, and the runs `hetopt run` declined.
struct LoopReport {
  std::vector<PlanStanding> plans;
  size_t current = SIZE_MAX;    ///< index into plans; SIZE_MAX: no planned run yet
  std::vector<LoopPair> pairs;  ///< every timing pair (timingPairs of each plan), oldest first
  size_t declined = 0;          ///< runs `hetopt run` declined to plan
  uint64_t lastDeclinedUnixNs = 0;
  size_t untouched = 0;  ///< runs of a reverted plan (untouched, not timed)
  size_t timed = 0;      ///< control and optimized runs
};
LoopReport loopReport(const Ledger& ledger);

/// The ledger line of a run record: the timed run its `seq` names, when that is the record's run
/// (of its kind, started while that run ran: a ledger set aside as corrupt starts its seqs anew,
/// so an older record's seq may name another run); else null.
const LedgerRun* ledgerRunOf(const Ledger& ledger, const RunRecord& record);

/// Why `next` (untouched) runs the program untouched, in one clause: the failed run, or each
/// plan's verdict.
std::string whyUntouched(const Ledger& ledger, const NextRun& next);

/// "1.21x [1.10-1.33] over 5 pairs" (or "2 pairs so far").
std::string describeVerdict(const Verdict& v);

/// What an optimized run says of its plan: "exploring: 2 pairs so far". `optimizedAsked`
/// (`--stats`) while the plan explores adds why such runs alone never add a pair: they are
/// always optimized, and a pair needs a control run, which only a plain `hetopt run` makes.
std::string describeStanding(const Verdict& v, bool optimizedAsked);

}  // namespace hetopt::analyzer
