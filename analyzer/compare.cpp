// SPDX-License-Identifier: MIT
/** @file See compare.h.
 * Before and after: measured savings from stored runs, the comparison's text, bars and JSON. */
#include "analyzer/compare.h"

#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "analyzer/report.h"
#include "common/json_writer.h"

namespace hetopt::analyzer {
namespace {

double tracedWithoutRecording(const AppProfile& p) {
  return std::max(0.0, p.breakdown.totalNs - p.breakdown.recordingNs);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One row of the table: the wall time measured; kernel and communication as traced, an
// optimized run's communication less what the profile predicts its pinned transfers save ('~':
// predicted); cpu+sync the rest.
void row(std::string* s, const std::string& label, const Breakdown& b, bool predicted,
         const std::string& rest) {
  const std::string mark = predicted ? "~" : "";
  appendf(s, "%-23s %10s %10s %14s %11s  %s\n", label.c_str(), formatDuration(b.totalNs).c_str(),
          formatDuration(b.kernelNs).c_str(), (mark + formatDuration(b.communicationNs)).c_str(),
          (mark + formatDuration(b.cpuSyncNs)).c_str(), rest.c_str());
}

std::vector<const StoredRun*> ofKind(const std::vector<StoredRun>& runs, RunKind kind) {
  std::vector<const StoredRun*> out;
  for (const StoredRun& r : runs)
    if (r.record.kind == kind) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const StoredRun* a, const StoredRun* b) {
    return a->record.startedUnixNs < b->record.startedUnixNs;
  });
  return out;
}

// "1.23 s (1.10 s to 1.40 s)", or "1.23 s" for one time
std::string spread(const WallTimes& w) {
  if (w.minNs == w.maxNs) return formatDuration(w.medianNs);
  return formatDuration(w.medianNs) + " (" + formatDuration(w.minNs) + " to " +
         formatDuration(w.maxNs) + ")";
}

const char* plural(size_t n) { return n == 1 ? "" : "s"; }

}  // namespace

std::string utcTime(uint64_t unixNs) {
  const time_t t = static_cast<time_t>(unixNs / 1000000000ull);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

StoredRun runFromRecord(const AppProfile& profile, const RunRecord& record) {
  StoredRun run;
  run.record = record;
  run.bar.label = std::string(runKindName(record.kind)) + " " + utcTime(record.startedUnixNs) +
                  " pid " + std::to_string(record.pid);
  runBreakdown(profile, record, &run.bar.breakdown);
  return run;
}

std::vector<StoredRun> newestRuns(const std::vector<StoredRun>& runs, size_t last) {
  std::vector<const StoredRun*> kept;
  size_t seen[2] = {0, 0};
  for (auto r = runs.rbegin(); r != runs.rend(); ++r)
    if (seen[r->record.kind == RunKind::Untouched]++ < last) kept.push_back(&*r);
  std::vector<StoredRun> out;
  for (auto r = kept.rbegin(); r != kept.rend(); ++r) out.push_back(**r);
  return out;
}

WallTimes wallTimes(const std::vector<StoredRun>& runs, RunKind kind) {
  std::vector<double> walls;
  for (const StoredRun* r : ofKind(runs, kind))
    walls.push_back(static_cast<double>(r->record.wallNs));
  WallTimes w;
  w.count = walls.size();
  if (walls.empty()) return w;
  w.medianNs = median(walls);
  w.minNs = *std::min_element(walls.begin(), walls.end());
  w.maxNs = *std::max_element(walls.begin(), walls.end());
  return w;
}

MeasuredSaving measureSaving(const AppProfile& profile, const std::vector<StoredRun>& runs,
                             const LoopReport& loop, size_t last) {
  MeasuredSaving m;
  m.last = last;
  for (const StoredRun& r : runs)
    ++(r.record.kind == RunKind::Untouched ? m.untouchedRecorded : m.optimizedRecorded);
  const std::vector<StoredRun> shown = newestRuns(runs, last);
  m.optimized = wallTimes(shown, RunKind::Optimized);
  m.untouched = wallTimes(shown, RunKind::Untouched);
  m.tracedNs = tracedWithoutRecording(profile);
  if (m.optimized.count) m.tracedLessOptimizedNs = m.tracedNs - m.optimized.medianNs;
  if (loop.current >= loop.plans.size()) return m;
  const PlanStanding& plan = loop.plans[loop.current];
  m.planId = plan.planId;
  std::vector<double> controls;
  for (const LoopPair& p : loop.pairs) {
    if (p.planId != plan.planId || !p.inVerdict) continue;
    controls.push_back(p.wall.controlNs);
    const uint64_t first = std::min(p.controlStartedUnixNs, p.optimizedStartedUnixNs),
                   lastStart = std::max(p.controlStartedUnixNs, p.optimizedStartedUnixNs);
    m.fromUnixNs = m.fromUnixNs ? std::min(m.fromUnixNs, first) : first;
    m.toUnixNs = std::max(m.toUnixNs, lastStart);
  }
  // The verdict's own numbers: the same pairs, its median.
  if (controls.empty() || controls.size() != plan.verdict.windowPairs ||
      !(plan.verdict.pairedMedian > 0))
    return m;
  m.pairs = controls.size();
  m.pairedMedian = plan.verdict.pairedMedian;
  m.controlMedianNs = median(controls);
  m.savingNs = m.controlMedianNs * (1 - 1 / m.pairedMedian);
  return m;
}

std::vector<BreakdownBar> comparisonBars(const AppProfile& profile,
                                         const std::vector<StoredRun>& runs) {
  std::vector<BreakdownBar> bars{{"traced", profile.breakdown}};
  // The time of day is enough to tell runs apart in a plot (the title has the date).
  for (RunKind kind : {RunKind::Untouched, RunKind::Optimized})
    for (const StoredRun* r : ofKind(runs, kind))
      bars.push_back(
          {std::string(runKindName(kind)) + " " + utcTime(r->record.startedUnixNs).substr(11),
           r->bar.breakdown});
  return bars;
}

namespace {

// An optimized run's communication is a prediction where what the profile predicts its pinned
// transfers save was taken off the traced one.
bool predictedCommunication(const AppProfile& profile, const StoredRun& run) {
  return run.record.kind == RunKind::Optimized &&
         run.bar.breakdown.communicationNs < profile.breakdown.communicationNs;
}

}  // namespace

std::string comparisonPlotNote(const AppProfile& profile, const std::vector<StoredRun>& runs) {
  for (const StoredRun& r : runs)
    if (predictedCommunication(profile, r))
      return "communication of optimized runs:\npredicted, not measured";
  return {};
}

namespace {

std::string planHex(uint64_t id) {
  char buf[24];
  snprintf(buf, sizeof buf, "%016" PRIx64, id);
  return std::string(buf, 8);
}

// One line per plan the closed loop ran, newest last, the current one marked.
void loopLines(std::string* s, const LoopReport& loop, const std::string& declineReason) {
  if (loop.plans.empty() && !loop.declined) return;
  s->append(
      "\nverdicts (the closed loop: control runs untouched beside optimized ones; `hetopt run\n"
      "--verify=off` turns it off):\n");
  for (size_t i = 0; i < loop.plans.size(); ++i) {
    const PlanStanding& p = loop.plans[i];
    appendf(s, "  plan %s  %-12s %s, %zu optimized run%s%s%s\n", planHex(p.planId).c_str(),
            p.failed ? "reverted" : verdictStateName(p.verdict.state),
            describeVerdict(p.verdict).c_str(), p.optimizedRuns, plural(p.optimizedRuns),
            p.failed ? "; a run failed (ended unlike the untouched program)" : "",
            i == loop.current ? "   <- the newest run's" : "");
  }
  if (loop.untouched)
    appendf(s, "  %zu run%s untouched since a plan was reverted\n", loop.untouched,
            plural(loop.untouched));
  if (loop.declined)
    appendf(s, "  `hetopt run` declined %zu run%s (the newest %s)%s%s\n", loop.declined,
            plural(loop.declined), utcTime(loop.lastDeclinedUnixNs).c_str(),
            declineReason.empty() ? "" : ": ", declineReason.c_str());
}

// "5.38 ms" or "5.38 ms LOST" (a negative saving).
std::string savedText(double ns) {
  return ns < 0 ? formatDuration(-ns) + " LOST" : formatDuration(ns);
}

// The pair a run of the ledger is in (its index in loop.pairs), or SIZE_MAX.
size_t pairOf(const LoopReport& loop, const RunRecord& rec) {
  if (!rec.seq) return SIZE_MAX;
  for (size_t i = 0; i < loop.pairs.size(); ++i)
    if (rec.kind == RunKind::Untouched ? loop.pairs[i].controlSeq == rec.seq
                                       : loop.pairs[i].optimizedSeq == rec.seq)
      return i;
  return SIZE_MAX;
}

// "; pair 3*: 5.38 ms saved" (the optimized run's row) or "; pair 3*" (its control's); '*': one of
// the pairs measured (`measuredPlan`'s verdict's window).
std::string pairText(const LoopReport& loop, const RunRecord& rec, uint64_t measuredPlan) {
  const size_t i = pairOf(loop, rec);
  if (i == SIZE_MAX) return rec.seq ? "; unpaired" : "";
  const LoopPair& p = loop.pairs[i];
  std::string s = "; pair " + std::to_string(i + 1);
  if (p.planId == measuredPlan && p.inVerdict) s += "*";
  if (rec.kind == RunKind::Optimized) {
    const double saved = p.wall.controlNs - p.wall.optimizedNs;
    s += ": " + savedText(saved) + (saved < 0 ? "" : " saved");
  } else if (p.planId != measuredPlan) {
    s += " (plan " + planHex(p.planId) + ")";
  }
  return s;
}

// Whether the closed loop ran plan `id` (it has a verdict line).
bool hasVerdict(const LoopReport& loop, uint64_t id) {
  for (const PlanStanding& p : loop.plans)
    if (p.planId == id) return true;
  return false;
}

std::string shownText(const MeasuredSaving& m) {
  const bool all =
      m.untouched.count == m.untouchedRecorded && m.optimized.count == m.optimizedRecorded;
  std::string s = "runs recorded: " + std::to_string(m.untouchedRecorded) + " untouched, " +
                  std::to_string(m.optimizedRecorded) + " optimized; ";
  if (all) return s + "all shown";
  return s + "shown: the newest " + std::to_string(m.untouched.count) + " untouched and " +
         std::to_string(m.optimized.count) + " optimized (--last " + std::to_string(m.last) + ")";
}

}  // namespace

std::string formatComparison(const AppProfile& p, const std::vector<StoredRun>& allRuns,
                             const LoopReport& loop, const std::string& declineReason,
                             size_t last) {
  const MeasuredSaving m = measureSaving(p, allRuns, loop, last);
  const std::vector<StoredRun> runs = newestRuns(allRuns, last);
  std::string s;
  appendf(&s, "%s (%s)%s\n", p.program.describe().c_str(), p.program.key().c_str(),
          p.device.empty() ? "" : (" on " + p.device).c_str());
  appendf(&s, "traced %s; %s\n\n", p.createdUtc.c_str(), shownText(m).c_str());
  appendf(&s, "%-23s %10s %10s %14s %11s\n", "", "measured", "as traced", "~: predicted",
          "the rest");
  appendf(&s, "%-23s %10s %10s %14s %11s  %s\n", "run", "wall", "kernel", "communication",
          "cpu+sync", "transfers pinned/pageable/other; plan; pair (oldest first)");
  row(&s, "traced", p.breakdown, false,
      p.breakdown.recordingNs > 0 ? "recording cost " + formatDuration(p.breakdown.recordingNs)
                                  : "");
  auto ended = [](const RunRecord& rec) {
    if (rec.signal) return ", ended by signal " + std::to_string(rec.signal);
    return rec.exitStatus ? ", exit status " + std::to_string(rec.exitStatus) : std::string();
  };
  bool predicted = false, paired = false, starred = false;
  std::vector<const StoredRun*> ordered;
  for (const StoredRun& r : runs) ordered.push_back(&r);
  std::stable_sort(ordered.begin(), ordered.end(), [](const StoredRun* a, const StoredRun* b) {
    return a->record.startedUnixNs < b->record.startedUnixNs;
  });
  for (const StoredRun* r : ordered) {
    const RunRecord& rec = r->record;
    const std::string pair = pairText(loop, rec, m.planId);
    paired |= pair.rfind("; pair ", 0) == 0;
    starred |= pair.find('*') != std::string::npos;
    if (rec.kind == RunKind::Untouched) {
      row(&s, utcTime(rec.startedUnixNs), r->bar.breakdown, false,
          std::string(rec.seq ? "control run (no shim)" : "untouched (no shim)") + ended(rec) +
              (rec.note.empty() ? "" : ", " + rec.note) + pair);
      continue;
    }
    const bool cut = predictedCommunication(p, *r);
    predicted |= cut;
    std::string plan = "plan " + planHex(rec.planId);
    if (!hasVerdict(loop, rec.planId))
      plan += " (not in the run ledger: no verdict)";
    else if (loop.current < loop.plans.size() && loop.plans[loop.current].planId != rec.planId)
      plan += " (not the newest run's)";
    // A run the shim left no record of (hetopt's own record: its ending only) has no counts.
    const std::string transfers = rec.note == "no-shim-record"
                                      ? std::string("not recorded")
                                      : std::to_string(rec.pinned) + "/" +
                                            std::to_string(rec.pageable) + "/" +
                                            std::to_string(rec.other);
    row(&s, utcTime(rec.startedUnixNs), r->bar.breakdown, cut,
        transfers + "; " + plan + ", predicted " + formatDuration(rec.predictedSavingNs) +
            ended(rec) + (rec.note.empty() ? "" : ", " + rec.note) + pair);
  }
  s += "\nwall: measured, from hetopt's start until the program ended. kernel and communication: "
       "as\n"
       "traced; ";
  s += predicted ? "~: an optimized run's communication is the traced one less what its pinned\n"
                   "transfers save by the profile's predictions: a prediction, not a measurement.\n"
                   "cpu+sync: the wall time less the two (~: less a prediction).\n"
                 : "cpu+sync: the wall time less the two.\n";
  if (paired)
    s +=
        std::string(
            "pair N: a control run and the optimized run next to it in the run ledger, "
            "with what the\noptimized one saved") +
        (starred ? "; *: a pair the measured saving below (its plan's verdict) is over.\n" : ".\n");
  loopLines(&s, loop, declineReason);
  if (!m.optimized.count && !m.pairs) {
    s += loop.declined
             ? "\nno optimized run: `hetopt run` declined the program (see above)\n"
             : "\nno optimized run recorded yet: `hetopt run` the program, then report again\n";
    return s;
  }
  // The prediction of the plan measured, else of the newest optimized run's plan.
  const StoredRun* newest = nullptr;
  for (const StoredRun* r : ofKind(allRuns, RunKind::Optimized))
    if (!newest || !m.planId || r->record.planId == m.planId) newest = r;
  if (newest)
    appendf(&s, "\npredicted saving: %s per run (plan %s, priced by `hetopt run`)\n",
            formatDuration(newest->record.predictedSavingNs).c_str(),
            planHex(newest->record.planId).c_str());
  else
    s += "\n";
  if (m.pairs) {
    const std::string from = utcTime(m.fromUnixNs), to = utcTime(m.toUnixNs);
    const std::string range = from == to ? from
                              : from.substr(0, 10) == to.substr(0, 10)
                                  ? from.substr(0, 19) + " to " + to.substr(11)
                                  : from + " to " + to;
    appendf(&s,
            "measured saving:  %s per run (%.1f%%) by plan %s: the paired median of its\n"
            "                  verdict, %sx over %s%zu pair%s (%sruns of %s),\n"
            "                  applied to the median of their control runs, %s%s\n",
            savedText(m.savingNs).c_str(), 100.0 * std::fabs(m.savingNs) / m.controlMedianNs,
            planHex(m.planId).c_str(), ratioText(m.pairedMedian).c_str(),
            m.pairs < kVerdictWindow ? "its " : "its newest ", m.pairs, plural(m.pairs),
            starred ? "* above: " : "", range.c_str(), formatDuration(m.controlMedianNs).c_str(),
            m.pairs < kVerdictMinPairs ? "; too few pairs for a verdict yet" : "");
    return s;
  }
  // The plan measured still explores (or there is none yet): its runs will pair.
  const bool exploring = loop.current >= loop.plans.size() ||
                         (!loop.plans[loop.current].failed &&
                          loop.plans[loop.current].verdict.state == VerdictState::Exploring);
  if (exploring)
    appendf(&s,
            "measured saving:  none yet: no control run%s is paired with an optimized run\n"
            "                  (plain `hetopt run`s alternate the two while a plan is explored;\n"
            "                  `--stats` runs are always optimized)\n",
            m.planId ? (" of plan " + planHex(m.planId)).c_str() : "");
  else
    appendf(&s,
            "measured saving:  none: no control run of plan %s is paired with an optimized run,\n"
            "                  and it runs no more (its verdict above says why)\n",
            planHex(m.planId).c_str());
  if (!m.optimized.count) return s;
  const bool slower = m.tracedLessOptimizedNs < 0;
  appendf(&s,
          "against the trace: not measured: the median of the %zu optimized run%s shown,\n"
          "                  %s, is %s %s the traced run less its recording cost, %s:\n"
          "                  %s\n",
          m.optimized.count, plural(m.optimized.count), spread(m.optimized).c_str(),
          formatDuration(std::fabs(m.tracedLessOptimizedNs)).c_str(), slower ? "over" : "under",
          formatDuration(m.tracedNs).c_str(),
          slower ? "slower even than the traced run, which tracing slowed"
                 : "an upper bound of the saving (tracing slowed the traced run beyond its\n"
                   "                  recording sample: device timing, the trace file)");
  return s;
}

namespace {

void standingJson(JsonWriter& j, const PlanStanding& p) {
  char id[24];
  snprintf(id, sizeof id, "%016" PRIx64, p.planId);
  const Verdict& v = p.verdict;
  j.beginObject().member("plan", std::string(id));
  j.member("state", std::string(p.failed ? "reverted" : verdictStateName(v.state)));
  j.member("pairs", static_cast<uint64_t>(v.pairs));
  if (v.windowPairs)
    j.member("paired_median", v.pairedMedian);
  else
    j.key("paired_median").null();
  if (v.windowPairs >= 2)
    j.member("ci_low", v.ciLow).member("ci_high", v.ciHigh);
  else
    j.key("ci_low").null().key("ci_high").null();
  j.member("window_pairs", static_cast<uint64_t>(v.windowPairs)).member("failed", p.failed);
  j.member("optimized_runs", static_cast<uint64_t>(p.optimizedRuns)).endObject();
}

// "2026-11-25T18:36:12Z", as the JSON's traced_utc.
std::string isoTime(uint64_t unixNs) {
  const time_t t = static_cast<time_t>(unixNs / 1000000000ull);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string idHex(uint64_t id) {
  char buf[24];
  snprintf(buf, sizeof buf, "%016" PRIx64, id);
  return buf;
}

}  // namespace

std::string comparisonJson(const AppProfile& p, const std::vector<StoredRun>& runs,
                           const LoopReport& loop, const std::string& declineReason, size_t last) {
  const MeasuredSaving m = measureSaving(p, runs, loop, last);
  std::string out;
  JsonWriter j(&out);
  j.beginObject()
      .member("format", kComparisonJsonFormat)
      .member("program", p.program.describe())
      .member("program_key", p.program.key());
  j.member("device", p.device).member("traced_utc", p.createdUtc);
  j.key("verdict");
  if (loop.current < loop.plans.size())
    standingJson(j, loop.plans[loop.current]);
  else
    j.null();
  j.key("plans").beginArray();
  for (const PlanStanding& s : loop.plans) standingJson(j, s);
  j.endArray();
  j.key("declined").beginObject().member("runs", static_cast<uint64_t>(loop.declined));
  j.member("reason", declineReason).endObject();
  j.member("untouched_after_revert", static_cast<uint64_t>(loop.untouched));
  j.key("runs").beginObject().member("untouched", static_cast<uint64_t>(m.untouchedRecorded));
  j.member("optimized", static_cast<uint64_t>(m.optimizedRecorded));
  j.member("untouched_shown", static_cast<uint64_t>(m.untouched.count));
  j.member("optimized_shown", static_cast<uint64_t>(m.optimized.count)).endObject();
  j.key("measured").beginObject();
  if (m.planId)
    j.member("plan", idHex(m.planId));
  else
    j.key("plan").null();
  j.member("pairs", static_cast<uint64_t>(m.pairs));
  if (m.pairs) {
    j.member("saving_ns", m.savingNs).member("paired_median", m.pairedMedian);
    j.member("control_median_ns", m.controlMedianNs);
    j.member("from_utc", isoTime(m.fromUnixNs)).member("to_utc", isoTime(m.toUnixNs));
  } else {
    j.key("saving_ns").null().key("paired_median").null().key("control_median_ns").null();
    j.key("from_utc").null().key("to_utc").null();
  }
  if (!m.pairs && m.optimized.count)
    j.member("traced_less_optimized_ns", m.tracedLessOptimizedNs);
  else
    j.key("traced_less_optimized_ns").null();
  j.endObject();
  j.key("pairs").beginArray();
  for (const LoopPair& r : loop.pairs)
    j.beginObject()
        .member("plan", idHex(r.planId))
        .member("control_seq", r.controlSeq)
        .member("optimized_seq", r.optimizedSeq)
        .member("control_ns", r.wall.controlNs)
        .member("optimized_ns", r.wall.optimizedNs)
        .member("in_verdict", r.inVerdict)
        .endObject();
  j.endArray().endObject();
  return out + "\n";
}

}  // namespace hetopt::analyzer
