// SPDX-License-Identifier: MIT
/**
 * @file The closed loop's schedule and judgement on synthetic ledgers (analyzer/closed_loop.h):
 * runs alternate while a plan explores, a verdict leaves one control run in ten, a lost plan gives
 * way to the next smaller one and then to untouched runs, and an optimized run that ends unlike
 * its control reverts its plan for good.
 */
#include "analyzer/closed_loop.h"

#include <gtest/gtest.h>

namespace hetopt::analyzer {
namespace {

constexpr uint64_t kPlan = 0x1111, kSmaller = 0x2222;

struct Book {
  Ledger ledger;
  // Appends a run; `ms` 0 leaves it running.
  LedgerRun& add(LedgerKind kind, uint64_t plan, double ms, RunEnd end = RunEnd::Exited,
                 uint64_t code = 0) {
    LedgerRun r;
    r.seq = ledger.runs.size() + 1;
    r.kind = kind, r.planId = plan;
    r.pid = 100 + r.seq;
    if (ms > 0) r.end = end, r.code = code, r.wallNs = static_cast<uint64_t>(ms * 1e6);
    ledger.runs.push_back(r);
    return ledger.runs.back();
  }
  // What nextRun says, then that run done at `ms` (optimized) or `controlMs` (control).
  NextRun step(const std::vector<uint64_t>& chain, double ms, double controlMs) {
    NextRun next = nextRun(ledger, chain, false);
    if (next.kind == NextKind::Optimized)
      add(LedgerKind::Optimized, chain[next.variant], ms);
    else if (next.kind == NextKind::Control)
      add(LedgerKind::Control, chain[next.variant], controlMs);
    else
      add(LedgerKind::Untouched, chain[0], 0);
    return next;
  }
};

TEST(ClosedLoop, RunsAlternateWhileThePlanExploresStartingOptimized) {
  Book b;
  std::vector<NextKind> kinds;
  for (int i = 0; i < 6; ++i) kinds.push_back(b.step({kPlan}, 100 + i % 3, 104 + i % 2).kind);
  EXPECT_EQ(kinds,
            (std::vector<NextKind>{NextKind::Optimized, NextKind::Control, NextKind::Optimized,
                                   NextKind::Control, NextKind::Optimized, NextKind::Control}));
  EXPECT_EQ(pairRuns(b.ledger).size(), 3u);
}

TEST(ClosedLoop, PairsAreNeighboursAndSkipRunningLostAndInterruptedRuns) {
  Book b;
  b.add(LedgerKind::Optimized, kPlan, 100);                       // pairs with the control at 5
  b.add(LedgerKind::Control, kPlan, 0);                           // still running
  b.add(LedgerKind::Control, kPlan, 90, RunEnd::Interrupted, 2);  // the user pressed Ctrl-C
  b.add(LedgerKind::Declined, 0, 0);                              // not timed
  b.add(LedgerKind::Control, kPlan, 120);
  b.add(LedgerKind::Optimized, kPlan, 100);
  b.add(LedgerKind::Optimized, kPlan, 101);  // pairs with the control after it
  b.add(LedgerKind::Control, kPlan, 130);
  const std::vector<LedgerPair> pairs = pairRuns(b.ledger);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].optimized->seq, 1u);
  EXPECT_EQ(pairs[0].control->seq, 5u);
  EXPECT_EQ(pairs[1].optimized->seq, 7u);
  EXPECT_EQ(pairs[1].control->seq, 8u);
  const std::vector<RunPair> t = timingPairs(pairs, kPlan);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].controlNs, 120e6);
  EXPECT_EQ(t[1].optimizedNs, 101e6);
}

TEST(ClosedLoop, AnOptimizedRunStillRunningMakesTheNextConcurrentRunAControl) {
  Book b;
  b.add(LedgerKind::Optimized, kPlan, 0);  // started, not ended (make -j)
  EXPECT_EQ(nextRun(b.ledger, {kPlan}, false).kind, NextKind::Control);
}

TEST(ClosedLoop, AClearGainIsKeptAndThenOneRunInTenIsAControl) {
  Book b;
  for (int i = 0; i < 6; ++i) b.step({kPlan}, 70 + i % 2, 100 + i % 3);
  NextRun next = nextRun(b.ledger, {kPlan}, false);
  ASSERT_EQ(next.chain[0].verdict.state, VerdictState::Kept);
  int controls = 0;
  for (int i = 0; i < 30; ++i) controls += b.step({kPlan}, 70, 100).kind == NextKind::Control;
  EXPECT_EQ(controls, 3) << "one in " << kWatchEvery;
}

TEST(ClosedLoop, ALostPlanGivesWayToTheSmallerOneAndThenToUntouchedRuns) {
  Book b;
  const std::vector<uint64_t> chain = {kPlan, kSmaller};
  for (int i = 0; i < 6; ++i) b.step(chain, 130 + i % 2, 100 + i % 3);  // 30% slower
  NextRun next = nextRun(b.ledger, chain, false);
  EXPECT_EQ(next.chain[0].verdict.state, VerdictState::Reverted);
  EXPECT_EQ(next.kind, NextKind::Optimized);
  EXPECT_EQ(next.variant, 1u);
  for (int i = 0; i < 6; ++i) b.step(chain, 125 + i % 2, 100 + i % 3);
  next = nextRun(b.ledger, chain, false);
  EXPECT_EQ(next.kind, NextKind::Untouched);
  EXPECT_EQ(next.why, "exhausted");
  EXPECT_NE(whyUntouched(b.ledger, next).find("every plan tried"), std::string::npos)
      << whyUntouched(b.ledger, next);
  EXPECT_EQ(nextRun(b.ledger, chain, true).kind, NextKind::Untouched)
      << "--stats does not bring a lost plan back";
}

TEST(ClosedLoop, AnOptimizedRunEndingUnlikeItsControlIsAFailure) {
  Book b;
  b.add(LedgerKind::Optimized, kPlan, 100, RunEnd::Exited, 1);
  EXPECT_FALSE(findFailure(b.ledger, pairRuns(b.ledger), kPlan).failed)
      << "an exit status with no untouched run to compare with waits for its control";
  b.add(LedgerKind::Control, kPlan, 0);
  EXPECT_FALSE(findFailure(b.ledger, pairRuns(b.ledger), kPlan).failed)
      << "its control has not ended yet";
  b.ledger.runs.back().end = RunEnd::Exited;
  b.ledger.runs.back().wallNs = 100000000;
  Failure f = findFailure(b.ledger, pairRuns(b.ledger), kPlan);
  ASSERT_TRUE(f.failed);
  EXPECT_EQ(f.run->seq, 1u);
  EXPECT_EQ(f.what, "exit status 1, its control run exit status 0");
  EXPECT_TRUE(timingPairs(pairRuns(b.ledger), kPlan).empty()) << "a failed pair is no timing";
  // Once a control has ended, a later optimized run that ends otherwise fails at once.
  Book c;
  c.add(LedgerKind::Optimized, kPlan, 100);
  c.add(LedgerKind::Control, kPlan, 100);
  c.add(LedgerKind::Optimized, kPlan, 100, RunEnd::Signaled, 15);
  f = findFailure(c.ledger, pairRuns(c.ledger), kPlan);
  ASSERT_TRUE(f.failed);
  EXPECT_EQ(f.run->seq, 3u);
  EXPECT_EQ(f.what, "signal 15, its control run exit status 0");
}

TEST(ClosedLoop, AnOptimizedRunKilledBeforeAnyControlIsAFailure) {
  Book b;
  b.add(LedgerKind::Optimized, kPlan, 100, RunEnd::Signaled, 11);
  const Failure f = findFailure(b.ledger, pairRuns(b.ledger), kPlan);
  ASSERT_TRUE(f.failed);
  EXPECT_EQ(f.control, nullptr);
}

TEST(ClosedLoop, AProgramThatAlwaysFailsTheSameWayIsNoFailure) {
  Book b;
  for (int i = 0; i < 3; ++i) {
    b.add(LedgerKind::Optimized, kPlan, 100, RunEnd::Exited, 3);
    b.add(LedgerKind::Control, kPlan, 100, RunEnd::Exited, 3);
  }
  EXPECT_FALSE(findFailure(b.ledger, pairRuns(b.ledger), kPlan).failed);
}

TEST(ClosedLoop, ARevertedPlanLeavesEveryRunUntouchedEvenWhenStatsAreAsked) {
  Book b;
  b.add(LedgerKind::Optimized, kPlan, 100, RunEnd::Signaled, 11);
  b.ledger.reverts.push_back({kPlan, 1, "failed"});
  const NextRun next = nextRun(b.ledger, {kPlan, kSmaller}, true);
  EXPECT_EQ(next.kind, NextKind::Untouched);
  EXPECT_EQ(next.why, "failed");
  EXPECT_NE(whyUntouched(b.ledger, next).find("signal 11"), std::string::npos)
      << whyUntouched(b.ledger, next);
}

TEST(ClosedLoop, StatsAskedMakesTheRunOptimizedWithoutBreakingThePairs) {
  Book b;
  b.add(LedgerKind::Optimized, kPlan, 100);
  EXPECT_EQ(nextRun(b.ledger, {kPlan}, false).kind, NextKind::Control);
  EXPECT_EQ(nextRun(b.ledger, {kPlan}, true).kind, NextKind::Optimized);
}

TEST(ClosedLoop, TheReportListsEveryPlanAndTheNewestRunsOne) {
  Book b;
  for (int i = 0; i < 6; ++i) b.step({kPlan, kSmaller}, 130, 100);
  b.step({kPlan, kSmaller}, 90, 100);
  b.add(LedgerKind::Declined, 0, 0);
  const LoopReport r = loopReport(b.ledger);
  ASSERT_EQ(r.plans.size(), 2u);
  EXPECT_EQ(r.plans[0].planId, kPlan);
  EXPECT_EQ(r.plans[0].verdict.state, VerdictState::Reverted);
  EXPECT_EQ(r.current, 1u);
  EXPECT_EQ(r.declined, 1u);
  EXPECT_EQ(r.timed, 7u);
}

// A reverted plan's upper bound lies below 1x: printed with two decimals it could read "1.00", and
// a kept plan's lower bound likewise; they get the digits that show the side of 1 they are on.
TEST(ClosedLoop, AVerdictsBoundsShowWhichSideOfOneTheyAreOn) {
  Verdict v;
  v.state = VerdictState::Reverted;
  v.pairs = v.windowPairs = 3;
  v.pairedMedian = 0.82, v.ciLow = 0.77, v.ciHigh = 0.9981;
  EXPECT_EQ(describeVerdict(v), "0.82x [0.77-0.998] over 3 pairs");
  v.pairedMedian = 1.0004, v.ciLow = 1.00004, v.ciHigh = 1.31;
  EXPECT_EQ(describeVerdict(v), "1.0004x [1.0000-1.31] over 3 pairs");
  v.pairedMedian = 1, v.ciLow = 0.8, v.ciHigh = 1.25;
  EXPECT_EQ(describeVerdict(v), "1.00x [0.80-1.25] over 3 pairs");
  EXPECT_EQ(ratioText(0.996), "0.996");
  EXPECT_EQ(ratioText(1.004), "1.004");
  EXPECT_EQ(ratioText(1.2345), "1.23");
}

// `--stats` runs are always optimized, so a user who runs only them sees "0 pairs so far" forever:
// the line says why, and plain runs say nothing of it.
TEST(ClosedLoop, AStatsRunSaysWhyItsPairsDoNotMove) {
  Book b;
  for (int i = 0; i < 3; ++i) b.add(LedgerKind::Optimized, kPlan, 100);  // three --stats runs
  const NextRun next = nextRun(b.ledger, {kPlan}, true);
  ASSERT_EQ(next.kind, NextKind::Optimized);
  const Verdict& v = next.chain[0].verdict;
  EXPECT_EQ(describeStanding(v, false), "exploring: 0 pairs so far");
  EXPECT_EQ(describeStanding(v, true),
            "exploring: 0 pairs so far; --stats runs are always optimized: the control runs that "
            "pairs need come from plain `hetopt run`s");
  // Decided plans need no such note.
  for (int i = 0; i < 10; ++i) b.step({kPlan}, 50, 100);
  const Verdict kept = nextRun(b.ledger, {kPlan}, true).chain[0].verdict;
  ASSERT_EQ(kept.state, VerdictState::Kept);
  EXPECT_EQ(describeStanding(kept, true).find("--stats"), std::string::npos);
}

// `hetopt report` marks the pairs it measures the saving on: those its plan's verdict is over (the
// newest kVerdictWindow of the plan's), each naming its two runs.
TEST(ClosedLoop, TheReportsPairsNameTheirRunsAndTheOnesTheVerdictIsOver) {
  Book b;
  for (int i = 0; i < 3; ++i) {
    b.add(LedgerKind::Optimized, kPlan, 130);
    b.add(LedgerKind::Control, kPlan, 100);
  }
  for (size_t i = 0; i < kVerdictWindow + 2; ++i) {
    b.add(LedgerKind::Optimized, kSmaller, 95 + static_cast<double>(i % 3));
    b.add(LedgerKind::Control, kSmaller, 100);
  }
  const LoopReport r = loopReport(b.ledger);
  ASSERT_EQ(r.pairs.size(), 3 + kVerdictWindow + 2);
  EXPECT_EQ(r.pairs[0].planId, kPlan);
  EXPECT_EQ(r.pairs[0].optimizedSeq, 1u);
  EXPECT_EQ(r.pairs[0].controlSeq, 2u);
  EXPECT_EQ(r.pairs[0].controlStartedUnixNs, b.ledger.runs[1].startedUnixNs);
  EXPECT_EQ(r.pairs[0].wall.controlNs, 100e6);
  EXPECT_EQ(r.pairs[0].wall.optimizedNs, 130e6);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(r.pairs[i].inVerdict) << "all of a plan's three";
  EXPECT_FALSE(r.pairs[3].inVerdict) << "older than the smaller plan's newest ten";
  EXPECT_FALSE(r.pairs[4].inVerdict);
  size_t in = 0;
  for (size_t i = 5; i < r.pairs.size(); ++i) in += r.pairs[i].inVerdict;
  EXPECT_EQ(in, kVerdictWindow);
  EXPECT_EQ(r.plans[1].verdict.windowPairs, kVerdictWindow);
}

// A record's `seq` names its ledger line only when the line is that run: a ledger moved aside as
// corrupt starts its seqs anew.
TEST(ClosedLoop, ARecordJoinsTheLedgerLineOfItsOwnRunOnly) {
  Book b;
  LedgerRun& o = b.add(LedgerKind::Optimized, kPlan, 100);
  o.startedUnixNs = 1795631813000000000ull;
  LedgerRun& c = b.add(LedgerKind::Control, kPlan, 100);
  c.startedUnixNs = 1795631814000000000ull;
  b.add(LedgerKind::Optimized, kPlan, 0);  // still running
  RunRecord r;
  r.kind = RunKind::Optimized;
  r.seq = 1;
  r.startedUnixNs = 1795631813000000000ull - 20000000;  // hetopt's start, before its ledger line
  EXPECT_EQ(ledgerRunOf(b.ledger, r), &b.ledger.runs[0]);
  r.seq = 2;
  EXPECT_EQ(ledgerRunOf(b.ledger, r), nullptr) << "a control run's line for an optimized record";
  r.kind = RunKind::Untouched;
  r.startedUnixNs = 1795631814000000000ull;
  EXPECT_EQ(ledgerRunOf(b.ledger, r), &b.ledger.runs[1]);
  r.startedUnixNs += 3600ull * 1000000000ull;  // an hour later: another run of that seq
  EXPECT_EQ(ledgerRunOf(b.ledger, r), nullptr);
  r.kind = RunKind::Optimized, r.seq = 3, r.startedUnixNs = 0;
  EXPECT_EQ(ledgerRunOf(b.ledger, r), nullptr) << "still running";
  r.seq = 0;
  EXPECT_EQ(ledgerRunOf(b.ledger, r), nullptr);
}

}  // namespace
}  // namespace hetopt::analyzer
