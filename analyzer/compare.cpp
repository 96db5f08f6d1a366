// SPDX-License-Identifier: MIT
/** @file See compare.h. */
#include "analyzer/compare.h"

#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "analyzer/report.h"

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
  appendf(s, "%-22s %10s %10s %13s %10s  %s\n", label.c_str(), formatDuration(b.totalNs).c_str(),
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
  return formatDuration(w.medianNs) + " (" + formatDuration(w.minNs) + " to " + formatDuration(w.maxNs) + ")";
}

const char* plural(size_t n) { return n == 1 ? "" : "s"; }

}  // namespace

std::string utcTime(uint64_t unixNs) {
  const time_t t = static_cast<time_t>(unixNs / 1000000000ull);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

StoredRun runFromRecord(const AppProfile& profile, const RunRecord& record) {
  StoredRun run;
  run.record = record;
  run.bar.label = std::string(runKindName(record.kind)) + " " + utcTime(record.startedUnixNs) + " pid " +
                  std::to_string(record.pid);
  runBreakdown(profile, record, &run.bar.breakdown);
  return run;
}

WallTimes wallTimes(const std::vector<StoredRun>& runs, RunKind kind) {
  std::vector<double> walls;
  for (const StoredRun* r : ofKind(runs, kind)) walls.push_back(static_cast<double>(r->record.wallNs));
  WallTimes w;
  w.count = walls.size();
  if (walls.empty()) return w;
  w.medianNs = median(walls);
  w.minNs = *std::min_element(walls.begin(), walls.end());
  w.maxNs = *std::max_element(walls.begin(), walls.end());
  return w;
}

MeasuredSaving measureSaving(const AppProfile& profile, const std::vector<StoredRun>& runs) {
  MeasuredSaving m;
  m.optimized = wallTimes(runs, RunKind::Optimized);
  m.untouched = wallTimes(runs, RunKind::Untouched);
  m.upperBound = m.untouched.count == 0;
  m.baselineNs = m.upperBound ? tracedWithoutRecording(profile) : m.untouched.medianNs;
  m.savingNs = m.optimized.count ? m.baselineNs - m.optimized.medianNs : 0;
  std::vector<const StoredRun*> all;
  for (const StoredRun& r : runs) all.push_back(&r);
  std::stable_sort(all.begin(), all.end(), [](const StoredRun* a, const StoredRun* b) {
    return a->record.startedUnixNs < b->record.startedUnixNs;
  });
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    const RunRecord &a = all[i]->record, &b = all[i + 1]->record;
    if (a.kind == b.kind) continue;
    const RunRecord& plain = a.kind == RunKind::Untouched ? a : b;
    const RunRecord& optimized = a.kind == RunKind::Untouched ? b : a;
    m.pairedNs.push_back(static_cast<double>(plain.wallNs) - static_cast<double>(optimized.wallNs));
    ++i;  // each run in one pair
  }
  return m;
}

std::vector<BreakdownBar> comparisonBars(const AppProfile& profile, const std::vector<StoredRun>& runs) {
  std::vector<BreakdownBar> bars{{"traced", profile.breakdown}};
  // The time of day is enough to tell runs apart in a plot (the title has the date).
  for (RunKind kind : {RunKind::Untouched, RunKind::Optimized})
    for (const StoredRun* r : ofKind(runs, kind))
      bars.push_back({std::string(runKindName(kind)) + " " + utcTime(r->record.startedUnixNs).substr(11),
                      r->bar.breakdown});
  return bars;
}

std::string formatComparison(const AppProfile& p, const std::vector<StoredRun>& runs) {
  const MeasuredSaving m = measureSaving(p, runs);
  std::string s;
  appendf(&s, "%s (%s)%s\n", p.program.describe().c_str(), p.program.key().c_str(),
          p.device.empty() ? "" : (" on " + p.device).c_str());
  appendf(&s, "traced %s; %zu untouched and %zu optimized run%s recorded\n\n", p.createdUtc.c_str(),
          m.untouched.count, m.optimized.count, plural(m.optimized.count));
  appendf(&s, "%-22s %10s %10s %13s %10s  %s\n", "run (UTC)", "total", "kernel", "communication",
          "cpu+sync", "transfers pinned/pageable/other, predicted and measured saving");
  row(&s, "traced", p.breakdown,
      p.breakdown.recordingNs > 0 ? "recording cost " + formatDuration(p.breakdown.recordingNs) : "");
  for (const StoredRun* r : ofKind(runs, RunKind::Untouched)) {
    const RunRecord& rec = r->record;
    row(&s, utcTime(rec.startedUnixNs), r->bar.breakdown,
        "untouched (no shim)" + (rec.exitStatus ? ", exit status " + std::to_string(rec.exitStatus) : ""));
  }
  for (const StoredRun* r : ofKind(runs, RunKind::Optimized)) {
    const RunRecord& rec = r->record;
    char plan[24];
    snprintf(plan, sizeof plan, "%016" PRIx64, rec.planId);
    row(&s, utcTime(rec.startedUnixNs), r->bar.breakdown,
        std::to_string(rec.pinned) + "/" + std::to_string(rec.pageable) + "/" + std::to_string(rec.other) +
            ", predicted " + formatDuration(rec.predictedSavingNs) + ", measured " +
            formatDuration(m.baselineNs - static_cast<double>(rec.wallNs)) + " (plan " + std::string(plan, 8) + ")");
  }
  s += "\nkernel: as traced; communication of an optimized run: as traced less what its pinned\n"
       "transfers save by the profile's predictions (of an untouched run: as traced); cpu+sync: the\n"
       "rest of its measured time.\n";
  if (!m.optimized.count) {
    s += "no optimized run recorded yet: `hetopt run` the program, then report again\n";
    return s;
  }
  appendf(&s, "predicted saving: %s per run (the newest run's plan)\n",
          formatDuration(ofKind(runs, RunKind::Optimized).back()->record.predictedSavingNs).c_str());
  if (m.upperBound) {
    appendf(&s, "measured saving:  %s, an upper bound (traced %s less its recording cost, against the "
            "median of %zu optimized run%s, %s)\n",
            formatDuration(m.savingNs).c_str(), formatDuration(m.baselineNs).c_str(), m.optimized.count,
            plural(m.optimized.count), spread(m.optimized).c_str());
    s += "(the traced run also paid for tracing beyond its recording sample: device timing, the trace\n"
         "file. For the saving against plain runs, run the program untouched a few times, best\n"
         "alternating with optimized runs: `hetopt run --untouched -- PROGRAM ARGS`, then report again)\n";
    return s;
  }
  appendf(&s, "measured saving:  %s per run (%.1f%%): the median of %zu untouched run%s, %s, less the "
          "median of %zu optimized run%s, %s\n",
          formatDuration(m.savingNs).c_str(), m.baselineNs > 0 ? 100.0 * m.savingNs / m.baselineNs : 0.0,
          m.untouched.count, plural(m.untouched.count), spread(m.untouched).c_str(), m.optimized.count,
          plural(m.optimized.count), spread(m.optimized).c_str());
  if (m.pairedNs.size() >= 2)
    appendf(&s, "paired:           %zu untouched runs each against the optimized run next to it: median "
            "%s (%s to %s)\n",
            m.pairedNs.size(), formatDuration(median(m.pairedNs)).c_str(),
            formatDuration(*std::min_element(m.pairedNs.begin(), m.pairedNs.end())).c_str(),
            formatDuration(*std::max_element(m.pairedNs.begin(), m.pairedNs.end())).c_str());
  s += "(an untouched run is timed by hetopt from starting the program to reaping it, an optimized\n"
       "one by the shim from its start in the process to exit: loading and teardown count only in\n"
       "the untouched runs, and what `hetopt run` did before starting the program in neither)\n";
  return s;
}

}  // namespace hetopt::analyzer
