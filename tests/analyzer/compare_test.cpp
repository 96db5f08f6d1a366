// SPDX-License-Identifier: MIT
/**
 * @file The before-and-after of `hetopt report` (analyzer/compare.h) on synthetic run records and
 * ledgers: the measured saving is the paired estimate the verdict is made of (the newest run's
 * plan, over its verdict's pairs), the same whatever runs are shown and never of another sign than
 * the verdict's median; without pairs nothing is called measured, the traced run giving an upper
 * bound when it is a saving and a loss never called one; the table's headings put no prediction
 * under "measured", and every row names its plan as the verdict does.
 */
#include "analyzer/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "analyzer/report.h"
#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

constexpr uint64_t kPlan = 0xabcdef0123456789ull, kOther = 0x1234567800000000ull;
constexpr uint64_t kEpochS = 1795631813ull;  // 2026-11-25 18:36:53 UTC

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The line of `text` that starts with `prefix` (empty when none).
std::string lineStarting(const std::string& text, const std::string& prefix) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, prefix.size(), prefix) == 0) return text.substr(at, end - at);
    at = end + 1;
  }
  return {};
}

// A run of `kind` started `second` s after the epoch and lasting `wallMs`.
StoredRun run(const AppProfile& p, RunKind kind, uint64_t second, double wallMs,
              uint64_t exitStatus = 0, uint64_t plan = kPlan) {
  RunRecord r;
  r.kind = kind;
  r.writer = "0.1.0";
  r.programKey = p.program.key();
  r.pid = 1000 + second;
  r.startedUnixNs = (kEpochS + second) * 1000000000ull;
  r.wallNs = static_cast<uint64_t>(wallMs * 1e6);
  r.exitStatus = exitStatus;
  if (kind == RunKind::Optimized) {
    r.planId = plan;
    r.predictedSavingNs = 4e6;
    r.pinned = 7;
  }
  return runFromRecord(p, r);
}

// Runs of the closed loop: each in the ledger and as the record `hetopt report` stored, one
// second apart, oldest first.
struct Loop {
  const AppProfile& profile;
  Ledger ledger{};
  std::vector<StoredRun> runs{};
  void timed(LedgerKind kind, double ms, uint64_t plan = kPlan) {
    LedgerRun r;
    r.seq = ledger.runs.size() + 1, r.kind = kind, r.planId = plan;
    r.startedUnixNs = (kEpochS + r.seq) * 1000000000ull;
    r.end = RunEnd::Exited, r.wallNs = static_cast<uint64_t>(ms * 1e6);
    ledger.runs.push_back(r);
    StoredRun s =
        run(profile, kind == LedgerKind::Control ? RunKind::Untouched : RunKind::Optimized, r.seq,
            ms, 0, plan);
    s.record.seq = r.seq;
    runs.push_back(s);
  }
  // A control run, then the optimized run next to it.
  void pair(double controlMs, double optimizedMs, uint64_t plan = kPlan) {
    timed(LedgerKind::Control, controlMs, plan);
    timed(LedgerKind::Optimized, optimizedMs, plan);
  }
};

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(Compare, TheSavingIsTheVerdictsPairedMedianOnItsPairsControlRuns) {
  const AppProfile p = testing::sampleProfile();
  Loop l{p};
  // A drifting machine: each round 10 ms slower; the optimized run saves 5, 6 and 7 ms.
  const double saved[] = {5, 6, 7};
  for (int round = 0; round < 3; ++round)
    l.pair(100 + 10.0 * round, 100 + 10.0 * round - saved[round]);
  const LoopReport loop = loopReport(l.ledger);
  const MeasuredSaving m = measureSaving(p, l.runs, loop);
  ASSERT_EQ(m.pairs, 3u);
  EXPECT_EQ(m.planId, kPlan);
  EXPECT_EQ(m.untouchedRecorded, 3u);
  EXPECT_EQ(m.optimizedRecorded, 3u);
  const Verdict& v = loop.plans[loop.current].verdict;
  EXPECT_DOUBLE_EQ(m.pairedMedian, v.pairedMedian) << "the verdict's own median";
  EXPECT_DOUBLE_EQ(m.pairedMedian, medianOf({100 / 95.0, 110 / 104.0, 120 / 113.0}));
  EXPECT_NEAR(m.controlMedianNs, 110e6, 1);
  EXPECT_NEAR(m.savingNs, 110e6 * (1 - 1 / m.pairedMedian), 1);
  EXPECT_GT(m.savingNs, 0);
  EXPECT_EQ(m.fromUnixNs, (kEpochS + 1) * 1000000000ull);
  EXPECT_EQ(m.toUnixNs, (kEpochS + 6) * 1000000000ull);

  const std::string text = formatComparison(p, l.runs, loop);
  EXPECT_TRUE(contains(text, "runs recorded: 3 untouched, 3 optimized; all shown")) << text;
  EXPECT_TRUE(contains(lineStarting(text, "measured saving:"),
                       "measured saving:  " + formatDuration(m.savingNs) + " per run"))
      << text;
  EXPECT_TRUE(contains(text, "by plan abcdef01: the paired median of its\n")) << text;
  char ratio[16];
  snprintf(ratio, sizeof ratio, "%.2fx", m.pairedMedian);
  EXPECT_TRUE(contains(text, std::string(ratio) + " over its 3 pairs")) << text;
  EXPECT_TRUE(contains(text, "runs of 2026-11-25 18:36:54 to 18:36:59 UTC")) << text;
  EXPECT_FALSE(contains(text, "LOST")) << text;
  // Each optimized row: its pair and what that pair saved; each control row: its pair.
  EXPECT_TRUE(contains(text, "; plan abcdef01, predicted 4.00 ms; pair 1*: 5.00 ms saved")) << text;
  EXPECT_TRUE(contains(text, "control run (no shim); pair 3*\n")) << text;
}

// The report a user found: its headline changed with --last (control runs set against optimized
// runs made later, on a machine that had slowed down) while its paired median said slower. Now
// the headline is the verdict's pairs', whatever is shown, and says what it covers.
TEST(Compare, TheHeadlineIsTheSameForEveryLastAndHasTheVerdictsSign) {
  const AppProfile p = testing::sampleProfile();
  Loop l{p};
  // A busy machine first (controls of 300 ms), then a quiet one (100 ms); in every pair the
  // optimized run is 4% slower. Then five `--stats` runs (always optimized, unpaired) at a quiet
  // moment.
  for (int i = 0; i < 3; ++i) l.pair(300, 312);
  for (int i = 0; i < 4; ++i) l.pair(100, 104);
  for (int i = 0; i < 5; ++i) l.timed(LedgerKind::Optimized, 90);
  const LoopReport loop = loopReport(l.ledger);
  const Verdict& v = loop.plans[loop.current].verdict;
  ASSERT_LT(v.pairedMedian, 1);
  std::string headline;
  for (size_t last : {size_t{1}, size_t{3}, size_t{5}, size_t{20}}) {
    const MeasuredSaving m = measureSaving(p, l.runs, loop, last);
    EXPECT_LT(m.savingNs, 0) << "--last " << last;
    EXPECT_EQ(m.pairs, 7u) << "--last " << last;
    const std::string text = formatComparison(p, l.runs, loop, {}, last);
    const std::string line = lineStarting(text, "measured saving:");
    EXPECT_TRUE(contains(line, " LOST per run")) << text;
    if (headline.empty()) headline = line;
    EXPECT_EQ(line, headline) << "--last " << last;
    EXPECT_TRUE(contains(text,
                         "over its 7 pairs (* above: runs of 2026-11-25 18:36:54 to "
                         "18:37:07 UTC)"))
        << text;
    // The header counts what is recorded and says what is shown.
    EXPECT_TRUE(contains(text, "runs recorded: 7 untouched, 12 optimized; ")) << text;
    if (last < 7) {
      EXPECT_TRUE(contains(text, "shown: the newest " + std::to_string(last) + " untouched and " +
                                     std::to_string(last) + " optimized (--last " +
                                     std::to_string(last) + ")"))
          << text;
    } else {
      EXPECT_TRUE(contains(text, "; all shown")) << text;
    }
  }
  // What the headline was: the shown untouched runs' median less the shown optimized runs'; a
  // saving for --last 5 (the quiet --stats runs against controls from before), a loss for 20.
  const MeasuredSaving five = measureSaving(p, l.runs, loop, 5),
                       twenty = measureSaving(p, l.runs, loop, 20);
  EXPECT_GT(five.untouched.medianNs - five.optimized.medianNs, 0);
  EXPECT_LT(twenty.untouched.medianNs - twenty.optimized.medianNs, 0);
}

// With an even number of pairs the median of the differences and the median of the ratios can
// differ in sign; the headline takes the verdict's ratio, so it cannot.
TEST(Compare, TheHeadlineAgreesWithTheVerdictWhereTheMedianDifferenceWouldNot) {
  const AppProfile p = testing::sampleProfile();
  Loop l{p};
  l.pair(100, 200);   // 0.5x, 100 ms lost
  l.pair(1000, 850);  // 1.18x, 150 ms saved: the differences' median is +25 ms
  const LoopReport loop = loopReport(l.ledger);
  const MeasuredSaving m = measureSaving(p, l.runs, loop);
  ASSERT_EQ(m.pairs, 2u);
  EXPECT_LT(loop.plans[loop.current].verdict.pairedMedian, 1);
  EXPECT_LT(m.savingNs, 0);
  const std::string text = formatComparison(p, l.runs, loop);
  EXPECT_TRUE(contains(lineStarting(text, "measured saving:"), " LOST per run")) << text;
  EXPECT_TRUE(contains(text, "; too few pairs for a verdict yet\n")) << text;
  const std::string json = comparisonJson(p, l.runs, loop);
  EXPECT_TRUE(contains(json, "\"saving_ns\":-")) << json;
  EXPECT_TRUE(contains(json, "\"pairs\":2")) << json;
  // Times as the traced_utc beside them.
  EXPECT_TRUE(
      contains(json, "\"from_utc\":\"2026-11-25T18:36:54Z\",\"to_utc\":\"2026-11-25T18:36:57Z\""))
      << json;
}

// The measured saving is of the plan the newest run followed, which the verdict lines mark; the
// rows of another plan say so.
TEST(Compare, TheSavingIsOfTheNewestRunsPlanAndRowsOfOthersAreMarked) {
  const AppProfile p = testing::sampleProfile();
  Loop l{p};
  for (int i = 0; i < 3; ++i) l.pair(100, 150, kOther);  // reverted
  for (int i = 0; i < 3; ++i) l.pair(100, 90);
  StoredRun stray = run(p, RunKind::Optimized, 60, 95, 0, 0x5555555500000000ull);
  l.runs.push_back(stray);  // a plan the ledger never saw (a record from an older hetopt)
  const LoopReport loop = loopReport(l.ledger);
  const MeasuredSaving m = measureSaving(p, l.runs, loop);
  EXPECT_EQ(m.planId, kPlan);
  EXPECT_EQ(m.pairs, 3u);
  EXPECT_GT(m.savingNs, 0);
  const std::string text = formatComparison(p, l.runs, loop, {}, 20);
  EXPECT_TRUE(contains(lineStarting(text, "  plan abcdef01  "), "   <- the newest run's")) << text;
  EXPECT_TRUE(contains(lineStarting(text, "  plan 12345678  reverted"), "over 3 pairs")) << text;
  EXPECT_TRUE(contains(text, "; plan 12345678 (not the newest run's), predicted")) << text;
  EXPECT_TRUE(contains(text, "; plan 55555555 (not in the run ledger: no verdict), predicted"))
      << text;
  EXPECT_TRUE(contains(text, "control run (no shim); pair 1 (plan 12345678)")) << text;
  EXPECT_TRUE(contains(text, "by plan abcdef01")) << text;
  const std::string json = comparisonJson(p, l.runs, loop);
  EXPECT_TRUE(contains(json, "\"verdict\":{\"plan\":\"abcdef0123456789\"")) << json;
  EXPECT_TRUE(contains(json, "\"measured\":{\"plan\":\"abcdef0123456789\",\"pairs\":3")) << json;
}

// The communication of an optimized run is a prediction: it is marked so, and no heading above it
// says measured.
TEST(Compare, NoPredictionSitsUnderAMeasuredHeading) {
  AppProfile p = testing::sampleProfile();
  Loop l{p};
  l.pair(100, 90);
  // What the profile predicts pinning saves at its one site: the run pinned all its transfers.
  p.candidates[0].gain.known = true;
  l.runs.back().record.sites = {{p.candidates[0].siteKey, 10, 10 << 20, 10, 0}};
  l.runs.back() = runFromRecord(p, l.runs.back().record);
  ASSERT_LT(l.runs.back().bar.breakdown.communicationNs, p.breakdown.communicationNs)
      << "the sample profile predicts a saving";
  const std::string text = formatComparison(p, l.runs, loopReport(l.ledger));
  // The heading line above the column names says where each column comes from.
  const std::string head = lineStarting(text, "run ");
  const size_t headAt = text.find("\nrun ") + 1;
  const size_t aboveAt = text.rfind('\n', headAt - 2) + 1;
  const std::string above = text.substr(aboveAt, headAt - 1 - aboveAt);
  const size_t wall = head.find("wall"), comm = head.find("communication"),
               cpu = head.find("cpu+sync");
  ASSERT_NE(comm, std::string::npos) << text;
  EXPECT_EQ(above.find("measured"), above.rfind("measured")) << "one measured heading: " << above;
  EXPECT_LT(above.find("measured"), wall + 4) << "measured is over the wall time only: " << text;
  EXPECT_GT(above.find("measured") + 8, wall) << text;
  EXPECT_TRUE(contains(above.substr(comm - 1, cpu - comm), "predicted")) << text;
  // The optimized row's communication carries the mark; the control's does not.
  const std::string optimizedRow = lineStarting(text, "2026-11-25 18:36:55 UTC");
  const std::string controlRow = lineStarting(text, "2026-11-25 18:36:54 UTC");
  EXPECT_TRUE(
      contains(optimizedRow, " ~" + formatDuration(l.runs.back().bar.breakdown.communicationNs)))
      << text;
  EXPECT_FALSE(contains(controlRow, "~")) << text;
  EXPECT_TRUE(contains(text, "a prediction, not a measurement")) << text;
  // The plot says it too.
  EXPECT_EQ(comparisonPlotNote(p, l.runs),
            "communication of optimized runs:\npredicted, not measured");
  l.runs.pop_back();
  EXPECT_EQ(comparisonPlotNote(p, l.runs), "");
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

TEST(Compare, NewestRunsKeepsTheLastOfEachKindInOrder) {
  const AppProfile p = testing::sampleProfile();
  std::vector<StoredRun> runs;
  for (uint64_t i = 0; i < 6; ++i)
    runs.push_back(run(p, i % 2 ? RunKind::Optimized : RunKind::Untouched, i, 90));
  const std::vector<StoredRun> kept = newestRuns(runs, 2);
  ASSERT_EQ(kept.size(), 4u);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].record.pid, 1002u + i);
  EXPECT_EQ(newestRuns(runs, 50).size(), runs.size());
}

// Without a pair nothing is measured, and the report says so; the traced run then bounds the
// saving (tracing slowed it), and a loss against it is a loss, never an upper bound.
TEST(Compare, WithoutPairsNothingIsCalledMeasured) {
  AppProfile p = testing::sampleProfile();
  p.breakdown.recordingNs = 4e6;
  std::vector<StoredRun> runs = {run(p, RunKind::Optimized, 0, 80),
                                 run(p, RunKind::Optimized, 1, 84),
                                 run(p, RunKind::Untouched, 2, 85)};
  const MeasuredSaving m = measureSaving(p, runs, LoopReport{});
  EXPECT_EQ(m.pairs, 0u);
  EXPECT_EQ(m.savingNs, 0);
  const double traced = p.breakdown.totalNs - p.breakdown.recordingNs;
  EXPECT_NEAR(m.tracedLessOptimizedNs, traced - 82e6, 1);
  const std::string text = formatComparison(p, runs, LoopReport{});
  EXPECT_TRUE(contains(text,
                       "measured saving:  none yet: no control run is paired with an "
                       "optimized run"))
      << text;
  EXPECT_TRUE(contains(text,
                       "against the trace: not measured: the median of the 2 optimized runs "
                       "shown,\n                  " +
                           formatDuration(82e6) + " (" + formatDuration(80e6) + " to " +
                           formatDuration(84e6) + "), is "))
      << text;
  EXPECT_TRUE(contains(text, "(plain `hetopt run`s alternate the two while a plan is explored"))
      << text;
  EXPECT_TRUE(contains(text, formatDuration(traced - 82e6) + " under")) << text;
  EXPECT_TRUE(contains(text, "an upper bound of the saving")) << text;
  EXPECT_FALSE(contains(text, "measured saving:  " + formatDuration(traced - 82e6))) << text;
  const std::string json = comparisonJson(p, runs, LoopReport{});
  EXPECT_TRUE(contains(json, "\"saving_ns\":null")) << json;
  EXPECT_TRUE(contains(json, "\"traced_less_optimized_ns\":")) << json;

  // Slower than even the traced run: a loss, never a bound.
  p.breakdown.recordingNs = 0;
  runs = {run(p, RunKind::Optimized, 0, p.breakdown.totalNs / 1e6 + 30)};
  const std::string loss = formatComparison(p, runs, LoopReport{});
  EXPECT_FALSE(contains(loss, "upper bound")) << loss;
  EXPECT_TRUE(contains(loss, formatDuration(30e6) + " over")) << loss;
  EXPECT_TRUE(contains(loss, "slower even than the traced run")) << loss;

  EXPECT_TRUE(contains(loss, "optimized run shown,\n                  " +
                                 formatDuration(p.breakdown.totalNs + 30e6) + ", is"))
      << "one run has no range: " << loss;

  // Untouched runs only: shown, nothing to compare yet.
  runs = {run(p, RunKind::Untouched, 0, 90)};
  const std::string plain = formatComparison(p, runs, LoopReport{});
  EXPECT_TRUE(contains(plain, "runs recorded: 1 untouched, 0 optimized; all shown")) << plain;
  EXPECT_TRUE(contains(plain, "no optimized run recorded yet")) << plain;
  EXPECT_FALSE(contains(plain, "measured saving:")) << plain;
}

// A plan reverted before any pair (its first optimized run was killed) will not pair: the report
// does not promise pairs, and the run the shim left no record of has no transfer counts, but its
// plan's prediction.
TEST(Compare, ARevertedPlanWithoutPairsAndARunWithoutShimRecordAreSaidAsSuch) {
  const AppProfile p = testing::sampleProfile();
  Loop l{p};
  l.timed(LedgerKind::Optimized, 50);
  l.ledger.runs.back().end = RunEnd::Signaled, l.ledger.runs.back().code = 13;
  l.ledger.reverts.push_back({kPlan, 1, "failed"});
  RunRecord& rec = l.runs.back().record;
  rec.signal = 13, rec.note = "no-shim-record", rec.pinned = 0;
  const LoopReport loop = loopReport(l.ledger);
  ASSERT_TRUE(loop.plans[loop.current].failed);
  const std::string text = formatComparison(p, l.runs, loop);
  EXPECT_TRUE(contains(text, "measured saving:  none: no control run of plan abcdef01 is paired"))
      << text;
  EXPECT_FALSE(contains(text, "none yet")) << text;
  EXPECT_TRUE(contains(text,
                       "  not recorded; plan abcdef01, predicted 4.00 ms, ended by signal "
                       "13, no-shim-record; unpaired\n"))
      << text;
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

}  // namespace
}  // namespace hetopt::analyzer
