// SPDX-License-Identifier: MIT
/**
 * @file `hetopt report PROGRAM [ARGS]`: before and after for the user's own program. Moves the
 * run records left beside the program's plan (contracts/run_record.h: by the shim for optimized
 * runs, by `hetopt run --untouched` for untouched ones) into the DB
 * (`app_run_breakdowns`, `app_run_sites`), deleting each once stored, then prints the traced run
 * and the last untouched and optimized runs (analyzer/compare.h) and plots them (gnuplot, SVG and
 * PNG).
 */
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "analyzer/compare.h"
#include "analyzer/profile_store.h"
#include "cli/commands.h"
#include "cli/launch.h"
#include "common/db.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/program_identity.h"
#include "contracts/run_record.h"

namespace hetopt::cli {
namespace {

/// Runs kept per profile in the DB; older ones are dropped as new ones come.
constexpr size_t kKeptRuns = 50;

bool hasSuffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Moves the program's run records from the plans directory into the DB. A record that cannot be
// read (corrupt, truncated, another version, unsafe) gets one warning and is removed; one that
// cannot be stored stays for the next report. Returns how many were stored.
size_t ingestRecords(Db& db, const analyzer::AppProfile& profile, int64_t profileId,
                     const std::string& key) {
  const std::string dir = cacheDirectory() + "/plans";
  const std::string prefix = baseName(runRecordPrefix(dir + "/" + planFileName(key)));
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0 && hasSuffix(name, kRunRecordSuffix))
      files.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  size_t stored = 0;
  for (const std::string& path : files) {
    RunRecord record;
    std::string error;
    if (!readRunRecordFile(path, &record, &error)) {
      warn("ignoring a run record that cannot be used (%s); removing it", error.c_str());
      unlink(path.c_str());
      continue;
    }
    if (record.programKey != key) {
      warn("ignoring run record %s: it is for %s, not %s; removing it", path.c_str(),
           record.programKey.c_str(), key.c_str());
      unlink(path.c_str());
      continue;
    }
    if (!analyzer::storeRun(db, profileId, analyzer::runFromRecord(profile, record), kKeptRuns, &error)) {
      warn("report: cannot store run record %s: %s", path.c_str(), error.c_str());
      continue;
    }
    unlink(path.c_str());
    ++stored;
  }
  return stored;
}

// Keeps the `last` newest runs of each kind (runs come oldest first).
void keepNewest(std::vector<analyzer::StoredRun>* runs, size_t last) {
  std::vector<analyzer::StoredRun> kept;
  size_t seen[2] = {0, 0};
  for (auto r = runs->rbegin(); r != runs->rend(); ++r)
    if (seen[r->record.kind == RunKind::Untouched]++ < last) kept.push_back(std::move(*r));
  *runs = std::vector<analyzer::StoredRun>(std::make_move_iterator(kept.rbegin()),
                                           std::make_move_iterator(kept.rend()));
}

}  // namespace

int cmdReport(int argc, char** argv) {
  std::string dbPath, plotsDir = "hetopt-plots", error;
  bool help = false, noPlot = false;
  size_t last = 5;
  std::vector<std::string> program = splitProgram(
      argc, argv,
      [&](int i) -> int {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help = true, 1;
        if (!strcmp(argv[i], "--no-plot")) return noPlot = true, 1;
        if (i + 1 >= argc) return 0;
        if (!strcmp(argv[i], "--db")) return dbPath = argv[i + 1], 2;
        if (!strcmp(argv[i], "--plots")) return plotsDir = argv[i + 1], 2;
        if (!strcmp(argv[i], "--last")) {
          char* end = nullptr;
          long n = strtol(argv[i + 1], &end, 10);
          if (*end || n < 1 || n > 50) return 0;
          return last = static_cast<size_t>(n), 2;
        }
        return 0;
      },
      &error);
  if (help) {
    printf(
        "usage: hetopt report [options] [--] program [args...]\n\n"
        "Before and after for a program that `hetopt trace` profiled and `hetopt run` optimized:\n"
        "the traced run, the last untouched runs (`hetopt run --untouched`: no shim) and the last\n"
        "optimized runs (kernel, communication and cpu+sync per run, the transfers each optimized\n"
        "run made from pinned memory, went ahead pageable or from other memory), then the saving\n"
        "`hetopt run` predicted against the one measured: the untouched runs' median wall time less\n"
        "the optimized runs' median, with both counts and ranges (and the differences of neighbouring\n"
        "untouched and optimized runs when they alternate). Without untouched runs the saving is\n"
        "measured against the traced run, an upper bound, and said to be one. Every such run leaves\n"
        "a small run record beside its plan; this command moves them into the DB (the newest %zu\n"
        "of each kind per program are kept). The program is identified as `hetopt run` does (its\n"
        "arguments only matter for an interpreter's script); nothing is run.\n\n"
        "  --db PATH     profile DB (default $HETOPT_DB, else ~/.local/share/hetopt)\n"
        "  --last N      how many of the newest runs of each kind to show (1-50, default 5)\n"
        "  --plots DIR   where the breakdown plot goes (default ./hetopt-plots): gnuplot data and\n"
        "                script, SVG and PNG when gnuplot is on PATH, titled with device and date\n"
        "  --no-plot     print only\n\n"
        "Exit status: 0; 1 when the program has no current profile; 2 on hetopt's own errors.\n",
        kKeptRuns);
    return 0;
  }
  if (program.empty()) {
    warn("report: %s (see hetopt report --help)", error.c_str());
    return 2;
  }
  ProgramIdentity identity;
  if (!commandIdentity(program, &identity, &error, identityCacheDir())) {
    warn("report: cannot identify %s%s", program[0].c_str(), error.empty() ? "" : (": " + error).c_str());
    return 2;
  }
  std::unique_ptr<Db> db = Db::open(dbPath.empty() ? defaultDbPath() : dbPath,
                                    Db::Mode::ReadWriteCreate, &error);
  if (!db) {
    warn("report: %s", error.c_str());
    return 2;
  }
  analyzer::AppProfile profile;
  analyzer::ProfileLookup lookup;
  if (!analyzer::loadProfile(*db, identity, &profile, &lookup, &error)) {
    warn("report: %s", error.c_str());
    return 2;
  }
  if (lookup.status != analyzer::ProfileLookup::Status::Found) {
    warn("report: no current profile for %s; run `hetopt trace` on it first", identity.describe().c_str());
    return 1;
  }
  ingestRecords(*db, profile, lookup.id, identity.key());
  std::vector<analyzer::StoredRun> runs;
  if (!analyzer::loadRuns(*db, lookup.id, &runs, &error)) {
    warn("report: %s", error.c_str());
    return 2;
  }
  keepNewest(&runs, last);
  fputs(analyzer::formatComparison(profile, runs).c_str(), stdout);
  const analyzer::MeasuredSaving measured = analyzer::measureSaving(profile, runs);
  if (noPlot) return 0;
  const std::string date = runs.empty() ? profile.createdUtc
                                        : analyzer::utcTime(runs.back().record.startedUnixNs).substr(0, 10);
  const std::string title = baseName(profile.program.path) + " on " +
                            (profile.device.empty() ? "an unknown device" : profile.device) + ", " + date +
                            (measured.untouched.count ? ": traced, untouched and optimized runs"
                                                      : ": traced and optimized runs");
  analyzer::PlotOutput out;
  if (!analyzer::writeBreakdownPlot(plotsDir, analyzer::programSlug(profile.program.path) + "-report",
                                    title, analyzer::comparisonBars(profile, runs), &out, &error)) {
    warn("report: plot not written: %s", error.c_str());
    return 0;
  }
  if (!out.image.empty())
    printf("plot: %s and %s\n", out.image.c_str(), out.png.c_str());
  else
    printf("plot data: %s (%s)\n", out.data.c_str(), out.note.c_str());
  return 0;
}

}  // namespace hetopt::cli
