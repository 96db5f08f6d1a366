// SPDX-License-Identifier: MIT
/** @file See compare.h.
 * Before and after: measured savings from stored runs, the comparison's text, bars and JSON. */
#include "analyzer/compare.h"

#include <time.h>

#include <algorithm>
#include <cinttypes>
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

void row(std::string* s, const std::string& label, const Breakdown& b, const std::string& rest) {
  appendf(s, "%-23s %10s %10s %13s %10s  %s\n", label.c_str(), formatDuration(b.totalNs).c_str(),
          formatDuration(b.kernelNs).c_str(), formatDuration(b.communicationNs).c_str(),
          formatDuration(b.cpuSyncNs).c_str(), rest.c_str());
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

// "1.23 s (from 1.10 s to 1.40 s)"
std::string spread(const WallTimes& w) {
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
                             const LoopReport& loop) {
  MeasuredSaving m;
  m.optimized = wallTimes(runs, RunKind::Optimized);
  m.untouched = wallTimes(runs, RunKind::Untouched);
  m.upperBound = m.untouched.count == 0;
  m.baselineNs = m.upperBound ? tracedWithoutRecording(profile) : m.untouched.medianNs;
  m.savingNs = m.optimized.count ? m.baselineNs - m.optimized.medianNs : 0;
  for (const RunPair& p : loop.pairs) m.pairedNs.push_back(p.controlNs - p.optimizedNs);
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

// One line per plan the closed loop ran, newest last, the current one marked.
void loopLines(std::string* s, const LoopReport& loop, const std::string& declineReason) {
  if (loop.plans.empty() && !loop.declined) return;
  s->append(
      "\nverdicts (the closed loop: control runs untouched beside optimized ones; `hetopt run\n"
      "--verify=off` turns it off):\n");
  for (size_t i = 0; i < loop.plans.size(); ++i) {
    const PlanStanding& p = loop.plans[i];
    char id[24];
    snprintf(id, sizeof id, "%016" PRIx64, p.planId);
    appendf(s, "  plan %.8s  %-12s %s, %zu optimized run%s%s%s\n", id,
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

}  // namespace

std::string formatComparison(const AppProfile& p, const std::vector<StoredRun>& runs,
                             const LoopReport& loop, const std::string& declineReason) {
  const MeasuredSaving m = measureSaving(p, runs, loop);
  std::string s;
  appendf(&s, "%s (%s)%s\n", p.program.describe().c_str(), p.program.key().c_str(),
          p.device.empty() ? "" : (" on " + p.device).c_str());
  appendf(&s, "traced %s; %zu untouched and %zu optimized run%s recorded\n\n", p.createdUtc.c_str(),
          m.untouched.count, m.optimized.count, plural(m.optimized.count));
  appendf(&s, "%-23s %10s %10s %13s %10s  %s\n", "run", "total", "kernel", "communication",
          "cpu+sync", "transfers pinned/pageable/other, predicted and measured saving");
  row(&s, "traced", p.breakdown,
      p.breakdown.recordingNs > 0 ? "recording cost " + formatDuration(p.breakdown.recordingNs)
                                  : "");
  auto ended = [](const RunRecord& rec) {
    if (rec.signal) return ", ended by signal " + std::to_string(rec.signal);
    return rec.exitStatus ? ", exit status " + std::to_string(rec.exitStatus) : std::string();
  };
  for (const StoredRun* r : ofKind(runs, RunKind::Untouched)) {
    const RunRecord& rec = r->record;
    row(&s, utcTime(rec.startedUnixNs), r->bar.breakdown,
        std::string(rec.seq ? "control run (no shim)" : "untouched (no shim)") + ended(rec) +
            (rec.note.empty() ? "" : ", " + rec.note));
  }
  for (const StoredRun* r : ofKind(runs, RunKind::Optimized)) {
    const RunRecord& rec = r->record;
    char plan[24];
    snprintf(plan, sizeof plan, "%016" PRIx64, rec.planId);
    const double saved = m.baselineNs - static_cast<double>(rec.wallNs);
    row(&s, utcTime(rec.startedUnixNs), r->bar.breakdown,
        std::to_string(rec.pinned) + "/" + std::to_string(rec.pageable) + "/" +
            std::to_string(rec.other) + ", predicted " + formatDuration(rec.predictedSavingNs) +
            ", measured " + formatDuration(saved) + " (plan " + std::string(plan, 8) + ")" +
            ended(rec) + (rec.note.empty() ? "" : ", " + rec.note));
  }
  s += "\nkernel: as traced; communication of an optimized run: as traced less what its pinned\n"
       "transfers save by the profile's predictions (of an untouched run: as traced); cpu+sync: "
       "the\n"
       "rest of its measured time.\n";
  loopLines(&s, loop, declineReason);
  if (!m.optimized.count) {
    s += loop.declined
             ? "\nno optimized run: `hetopt run` declined the program (see above)\n"
             : "\nno optimized run recorded yet: `hetopt run` the program, then report again\n";
    return s;
  }
  appendf(
      &s, "\npredicted saving: %s per run (the newest run's plan)\n",
      formatDuration(ofKind(runs, RunKind::Optimized).back()->record.predictedSavingNs).c_str());
  const bool loss = m.savingNs < 0;
  const std::string amount =
      loss ? formatDuration(-m.savingNs) + " LOST" : formatDuration(m.savingNs);
  if (m.upperBound) {
    appendf(&s,
            "measured saving:  %s%s (traced %s less its recording cost, against the median of %zu "
            "optimized run%s, %s)\n",
            amount.c_str(), loss ? " per run" : ", an upper bound",
            formatDuration(m.baselineNs).c_str(), m.optimized.count, plural(m.optimized.count),
            spread(m.optimized).c_str());
    s +=
        loss
            ? "(even against the traced run, which tracing slowed, the optimized runs are slower)\n"
            : "(the traced run also paid for tracing beyond its recording sample: device timing, "
              "the trace\n"
              "file. The closed loop's control runs measure the real saving: plain `hetopt run`s "
              "do them)\n";
    return s;
  }
  appendf(&s,
          "measured saving:  %s per run (%.1f%%): the median of %zu untouched run%s, %s, less the "
          "median of %zu optimized run%s, %s\n",
          amount.c_str(), m.baselineNs > 0 ? 100.0 * m.savingNs / m.baselineNs : 0.0,
          m.untouched.count, plural(m.untouched.count), spread(m.untouched).c_str(),
          m.optimized.count, plural(m.optimized.count), spread(m.optimized).c_str());
  if (!m.pairedNs.empty())
    appendf(&s,
            "paired:           %zu control run%s each against the optimized run next to it (the "
            "run ledger): "
            "median %s (%s to %s)\n",
            m.pairedNs.size(), plural(m.pairedNs.size()),
            formatDuration(median(m.pairedNs)).c_str(),
            formatDuration(*std::min_element(m.pairedNs.begin(), m.pairedNs.end())).c_str(),
            formatDuration(*std::max_element(m.pairedNs.begin(), m.pairedNs.end())).c_str());
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

}  // namespace

std::string comparisonJson(const AppProfile& p, const std::vector<StoredRun>& runs,
                           const LoopReport& loop, const std::string& declineReason) {
  const MeasuredSaving m = measureSaving(p, runs, loop);
  std::string out;
  JsonWriter j(&out);
  j.beginObject()
      .member("format", 1)
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
  j.key("runs").beginObject().member("untouched", static_cast<uint64_t>(m.untouched.count));
  j.member("optimized", static_cast<uint64_t>(m.optimized.count)).endObject();
  j.key("measured").beginObject();
  if (m.optimized.count)
    j.member("saving_ns", m.savingNs);
  else
    j.key("saving_ns").null();
  j.member("against", std::string(m.upperBound ? "traced" : "untouched"));
  j.member("upper_bound", m.upperBound && m.optimized.count && m.savingNs >= 0);
  j.key("paired_ns").beginArray();
  for (double d : m.pairedNs) j.value(d);
  j.endArray().endObject();
  j.key("pairs").beginArray();
  for (const RunPair& r : loop.pairs)
    j.beginObject()
        .member("control_ns", r.controlNs)
        .member("optimized_ns", r.optimizedNs)
        .endObject();
  j.endArray().endObject();
  return out + "\n";
}

}  // namespace hetopt::analyzer
