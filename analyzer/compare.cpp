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

void row(std::string* s, const std::string& label, const Breakdown& b, const std::string& rest) {
  appendf(s, "%-22s %10s %10s %13s %10s  %s\n", label.c_str(), formatDuration(b.totalNs).c_str(),
          formatDuration(b.kernelNs).c_str(), formatDuration(b.communicationNs).c_str(),
          formatDuration(b.cpuSyncNs).c_str(), rest.c_str());
}

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
  run.bar.label = "optimized " + utcTime(record.startedUnixNs) + " pid " + std::to_string(record.pid);
  runBreakdown(profile, record, &run.bar.breakdown);
  return run;
}

std::vector<BreakdownBar> comparisonBars(const AppProfile& profile, const std::vector<StoredRun>& runs) {
  std::vector<BreakdownBar> bars{{"traced", profile.breakdown}};
  // The time of day is enough to tell runs apart in a plot (the title has the date).
  for (const StoredRun& r : runs) bars.push_back({utcTime(r.record.startedUnixNs).substr(11), r.bar.breakdown});
  return bars;
}

std::string formatComparison(const AppProfile& p, const std::vector<StoredRun>& runs) {
  std::string s;
  appendf(&s, "%s (%s)%s\n", p.program.describe().c_str(), p.program.key().c_str(),
          p.device.empty() ? "" : (" on " + p.device).c_str());
  appendf(&s, "traced %s; %zu optimized run%s recorded\n\n", p.createdUtc.c_str(), runs.size(),
          runs.size() == 1 ? "" : "s");
  appendf(&s, "%-22s %10s %10s %13s %10s  %s\n", "run (UTC)", "total", "kernel", "communication",
          "cpu+sync", "transfers pinned/pageable/other, predicted and measured saving");
  row(&s, "traced", p.breakdown,
      p.breakdown.recordingNs > 0 ? "recording cost " + formatDuration(p.breakdown.recordingNs) : "");
  const double traced = tracedWithoutRecording(p);
  std::vector<double> walls;
  for (const StoredRun& r : runs) {
    const RunRecord& rec = r.record;
    walls.push_back(static_cast<double>(rec.wallNs));
    char plan[24];
    snprintf(plan, sizeof plan, "%016" PRIx64, rec.planId);
    row(&s, utcTime(rec.startedUnixNs), r.bar.breakdown,
        std::to_string(rec.pinned) + "/" + std::to_string(rec.pageable) + "/" + std::to_string(rec.other) +
            ", predicted " + formatDuration(rec.predictedSavingNs) + ", measured " +
            formatDuration(traced - static_cast<double>(rec.wallNs)) + " (plan " + std::string(plan, 8) + ")");
  }
  s += "\nkernel: as traced; communication of an optimized run: as traced less what its pinned\n"
       "transfers save by the profile's predictions; cpu+sync: the rest of its measured time.\n";
  if (runs.empty()) {
    s += "no optimized run recorded yet: `hetopt run` the program, then report again\n";
    return s;
  }
  std::sort(walls.begin(), walls.end());
  const double median = walls.size() % 2 ? walls[walls.size() / 2]
                                         : (walls[walls.size() / 2 - 1] + walls[walls.size() / 2]) / 2;
  const RunRecord& last = runs.back().record;
  appendf(&s, "predicted saving: %s per run (the newest run's plan)\n",
          formatDuration(last.predictedSavingNs).c_str());
  appendf(&s, "measured saving:  %s (traced %s less its recording cost, against the median of %zu "
          "optimized run%s, %s)\n",
          formatDuration(traced - median).c_str(), formatDuration(traced).c_str(), walls.size(),
          walls.size() == 1 ? "" : "s", formatDuration(median).c_str());
  s += "(the traced run also paid for tracing beyond its recording sample: device timing, the\n"
       "trace file; the measured saving is an upper bound of what hetopt saves against a plain run)\n";
  return s;
}

}  // namespace hetopt::analyzer
