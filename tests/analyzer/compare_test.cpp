// SPDX-License-Identifier: MIT
/**
 * @file The before-and-after arithmetic of `hetopt report` (analyzer/compare.h) on synthetic run
 * records and ledgers: the measured saving is the untouched runs' median less the optimized runs'
 * median, with counts, ranges and the ledger's pairs; without untouched runs it is measured against
 * the traced run, an upper bound when it is a saving, and a loss is never called one.
 */
#include "analyzer/compare.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analyzer/report.h"
#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A run of `kind` started `second` s after the first and lasting `wallMs`.
StoredRun run(const AppProfile& p, RunKind kind, uint64_t second, double wallMs,
              uint64_t exitStatus = 0) {
  RunRecord r;
  r.kind = kind;
  r.writer = "0.1.0";
  r.programKey = p.program.key();
  r.pid = 1000 + second;
  r.startedUnixNs = (1795631813ull + second) * 1000000000ull;
  r.wallNs = static_cast<uint64_t>(wallMs * 1e6);
  r.exitStatus = exitStatus;
  if (kind == RunKind::Optimized) {
    r.planId = 0xabcdef0123456789ull;
    r.predictedSavingNs = 4e6;
    r.pinned = 7;
  }
  return runFromRecord(p, r);
}

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(Compare, SavingIsUntouchedMedianLessOptimizedMedianWithCountsAndRanges) {
  const AppProfile p = testing::sampleProfile();
  const std::vector<double> untouched = {92.5, 97.0, 90.0}, optimized = {81.0, 86.0, 79.5, 88.0};
  std::vector<StoredRun> runs;
  // Not interleaved: every untouched run first, so only the last untouched and first optimized
  // pair.
  for (size_t i = 0; i < untouched.size(); ++i)
    runs.push_back(run(p, RunKind::Untouched, i, untouched[i], i == 1 ? 3 : 0));
  for (size_t i = 0; i < optimized.size(); ++i)
    runs.push_back(run(p, RunKind::Optimized, 10 + i, optimized[i]));
  const MeasuredSaving m = measureSaving(p, runs, LoopReport{});
  EXPECT_FALSE(m.upperBound);
  EXPECT_EQ(m.untouched.count, untouched.size());
  EXPECT_EQ(m.optimized.count, optimized.size());
  const double expected = (medianOf(untouched) - medianOf(optimized)) * 1e6;
  EXPECT_NEAR(m.savingNs, expected, 1);
  EXPECT_NEAR(m.untouched.minNs, 90e6, 1);
  EXPECT_NEAR(m.untouched.maxNs, 97e6, 1);
  EXPECT_NEAR(m.optimized.medianNs, medianOf(optimized) * 1e6, 1)
      << "even count: the middle two's mean";
  EXPECT_TRUE(m.pairedNs.empty()) << "pairs come from the run ledger, not from the records' order";

  const std::string text = formatComparison(p, runs, LoopReport{});
  EXPECT_TRUE(contains(text, "3 untouched and 4 optimized runs recorded")) << text;
  EXPECT_TRUE(contains(text, "measured saving:  " + formatDuration(expected) + " per run")) << text;
  EXPECT_TRUE(contains(text, "the median of 3 untouched runs, " +
                                 formatDuration(medianOf(untouched) * 1e6) + " (" +
                                 formatDuration(90e6) + " to " + formatDuration(97e6) + ")"))
      << text;
  EXPECT_TRUE(
      contains(text, "median of 4 optimized runs, " + formatDuration(medianOf(optimized) * 1e6)))
      << text;
  EXPECT_FALSE(contains(text, "upper bound")) << text;
  EXPECT_FALSE(contains(text, "paired:")) << "one pair is no pairing: " << text;
  EXPECT_TRUE(contains(text, "untouched (no shim), exit status 3")) << text;
  // Each optimized row's measured saving is against the untouched median.
  EXPECT_TRUE(contains(text, "measured " +
                                 formatDuration((medianOf(untouched) - optimized[0]) * 1e6) +
                                 " (plan abcdef01)"))
      << text;

  const std::vector<BreakdownBar> bars = comparisonBars(p, runs);
  ASSERT_EQ(bars.size(), 1 + untouched.size() + optimized.size());
  EXPECT_EQ(bars[0].label, "traced");
  EXPECT_EQ(bars[1].label.rfind("untouched ", 0), 0u) << bars[1].label;
  EXPECT_EQ(bars[4].label.rfind("optimized ", 0), 0u) << bars[4].label;
  EXPECT_NEAR(bars[1].breakdown.totalNs, untouched[0] * 1e6, 1);
}

TEST(Compare, EveryTimeOfARunNamesItsZone) {
  const AppProfile p = testing::sampleProfile();
  const std::vector<StoredRun> runs = {run(p, RunKind::Untouched, 0, 90),
                                       run(p, RunKind::Optimized, 1, 80)};
  const std::string text = formatComparison(p, runs, LoopReport{});
  EXPECT_TRUE(contains(text, "\n2026-11-25 18:36:53 UTC ")) << text;
  EXPECT_TRUE(contains(text, "\n2026-11-25 18:36:54 UTC ")) << text;
  const std::vector<BreakdownBar> bars = comparisonBars(p, runs);
  ASSERT_EQ(bars.size(), 3u);
  EXPECT_EQ(bars[1].label, "untouched 18:36:53 UTC");
  EXPECT_EQ(bars[2].label, "optimized 18:36:54 UTC");
  EXPECT_NEAR(bars[1].breakdown.communicationNs, p.breakdown.communicationNs, 1)
      << "nothing pinned in a plain run";
}

// The pairs are the run ledger's: each control run against the optimized run next to it, the
// machine's drift between rounds cancelling in the differences.
TEST(Compare, PairsAreTheLedgersControlAndOptimizedNeighbours) {
  const AppProfile p = testing::sampleProfile();
  std::vector<StoredRun> runs;
  Ledger ledger;
  // Drifting machine: each round 10 ms slower; the optimized run saves 5, 6 and 7 ms. An optimized
  // `--stats` run comes first, outside the alternation: it pairs with nothing.
  const double saved[] = {5, 6, 7};
  auto timed = [&](LedgerKind kind, double ms) {
    LedgerRun r;
    r.seq = ledger.runs.size() + 1, r.kind = kind, r.planId = 0xabcdef0123456789ull;
    r.end = RunEnd::Exited, r.wallNs = static_cast<uint64_t>(ms * 1e6);
    ledger.runs.push_back(r);
    runs.push_back(
        run(p, kind == LedgerKind::Control ? RunKind::Untouched : RunKind::Optimized, r.seq, ms));
  };
  timed(LedgerKind::Optimized, 50);
  timed(LedgerKind::Optimized, 50);  // the newer of two optimized runs pairs with the next control
  for (int round = 0; round < 3; ++round) {
    const double plain = 100 + 10.0 * round;
    timed(LedgerKind::Control, plain);
    timed(LedgerKind::Optimized, plain - saved[round]);
  }
  const LoopReport loop = loopReport(ledger);
  const MeasuredSaving m = measureSaving(p, runs, loop);
  ASSERT_EQ(m.pairedNs.size(), 3u);
  EXPECT_NEAR(m.pairedNs[0], 50e6, 1) << "the --stats run and the first control";
  EXPECT_NEAR(m.pairedNs[1], (110 - 100 + saved[0]) * 1e6, 1)
      << "control of round 1 and optimized of round 0";
  const std::string text = formatComparison(p, runs, loop);
  EXPECT_TRUE(
      contains(text, "paired:           3 control runs each against the optimized run next to it"))
      << text;
  EXPECT_TRUE(contains(text, "plan abcdef01  exploring")) << text;
}

TEST(Compare, ALossIsNeverCalledAnUpperBound) {
  AppProfile p = testing::sampleProfile();
  p.breakdown.recordingNs = 0;
  const double traced = p.breakdown.totalNs;
  std::vector<StoredRun> runs = {run(p, RunKind::Optimized, 0, traced / 1e6 + 30)};
  const MeasuredSaving m = measureSaving(p, runs, LoopReport{});
  EXPECT_TRUE(m.upperBound);
  EXPECT_LT(m.savingNs, 0);
  const std::string text = formatComparison(p, runs, LoopReport{});
  EXPECT_FALSE(contains(text, "upper bound")) << text;
  EXPECT_TRUE(contains(text, "LOST per run")) << text;
  EXPECT_TRUE(contains(comparisonJson(p, runs, LoopReport{}), "\"upper_bound\":false"))
      << comparisonJson(p, runs, LoopReport{});
}

TEST(Compare, DeclinedRunsAreSaidWithTheirReason) {
  const AppProfile p = testing::sampleProfile();
  Ledger ledger;
  for (uint64_t i = 1; i <= 4; ++i) {
    LedgerRun r;
    r.seq = i, r.kind = LedgerKind::Declined, r.startedUnixNs = 1795631813000000000ull + i;
    ledger.runs.push_back(r);
  }
  const std::string text = formatComparison(p, {}, loopReport(ledger), "pinning does not pay here");
  EXPECT_TRUE(contains(text, "`hetopt run` declined 4 runs")) << text;
  EXPECT_TRUE(contains(text, "pinning does not pay here")) << text;
  EXPECT_TRUE(contains(text, "no optimized run: `hetopt run` declined the program")) << text;
  EXPECT_FALSE(contains(text, "no optimized run recorded yet")) << text;
}

TEST(Compare, WithoutUntouchedRunsTheSavingIsAnUpperBoundAndSaysHowToMeasureIt) {
  AppProfile p = testing::sampleProfile();
  p.breakdown.recordingNs = 4e6;
  std::vector<StoredRun> runs = {run(p, RunKind::Optimized, 0, 80),
                                 run(p, RunKind::Optimized, 1, 84)};
  const MeasuredSaving m = measureSaving(p, runs, LoopReport{});
  EXPECT_TRUE(m.upperBound);
  EXPECT_EQ(m.untouched.count, 0u);
  const double traced = p.breakdown.totalNs - p.breakdown.recordingNs;
  EXPECT_NEAR(m.baselineNs, traced, 1);
  EXPECT_NEAR(m.savingNs, traced - 82e6, 1);
  EXPECT_TRUE(m.pairedNs.empty());
  const std::string text = formatComparison(p, runs, LoopReport{});
  EXPECT_TRUE(
      contains(text, "measured saving:  " + formatDuration(traced - 82e6) + ", an upper bound"))
      << text;
  EXPECT_TRUE(contains(text, "control runs measure the real saving")) << text;

  // Untouched runs only: shown, nothing to compare yet.
  runs = {run(p, RunKind::Untouched, 0, 90)};
  const std::string plain = formatComparison(p, runs, LoopReport{});
  EXPECT_TRUE(contains(plain, "1 untouched and 0 optimized runs recorded")) << plain;
  EXPECT_TRUE(contains(plain, "no optimized run recorded yet")) << plain;
  EXPECT_FALSE(contains(plain, "measured saving:")) << plain;
}

}  // namespace
}  // namespace hetopt::analyzer
