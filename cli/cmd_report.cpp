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
#include <string>

#include "analyzer/closed_loop.h"
#include "analyzer/compare.h"
#include "analyzer/gain.h"
#include "analyzer/planner.h"
#include "analyzer/profile_store.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/launch.h"
#include "cli/run_targets.h"
#include "common/log.h"
#include "common/paths.h"
#include "contracts/run_ledger.h"
#include "contracts/run_record.h"
#include "store/db.h"

namespace hetopt::cli {
namespace {

/// Runs kept per profile in the DB; older ones are dropped as new ones come.
constexpr size_t kKeptRuns = 50;

bool hasSuffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Moves the program's run records from the plans directory into the DB. A record that cannot be
// read (corrupt, truncated, another version, unsafe) gets one warning and is removed; one that
// cannot be stored stays for the next report. Returns how many were stored.
size_t ingestRecords(Db& db, const analyzer::AppProfile& profile, int64_t profileId,
                     const std::string& key, const Ledger& ledger) {
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
    // A run the closed loop timed counts as hetopt timed it (from its own start until it reaped
    // the program, as its control runs), not as the shim saw it, and an optimized one names its
    // plan as the ledger and so the verdict do (a launcher's several plans have one identity
    // there, the shim of each program its own plan's).
    if (const LedgerRun* timed = analyzer::ledgerRunOf(ledger, record)) {
      if (timed->usable()) record.wallNs = timed->wallNs;
      if (record.kind == RunKind::Optimized && timed->planId) record.planId = timed->planId;
    } else {
      record.seq = 0;  // no run of this ledger: it pairs with nothing
    }
    if (!analyzer::storeRun(db, profileId, analyzer::runFromRecord(profile, record), kKeptRuns,
                            &error)) {
      warn("report: cannot store run record %s: %s", path.c_str(), error.c_str());
      continue;
    }
    unlink(path.c_str());
    ++stored;
  }
  return stored;
}

// The program's run ledger (empty when it has none; one that cannot be read gets a warning and
// counts as none).
Ledger readLedger(const std::string& key) {
  const std::string path = ledgerPath(cacheDirectory() + "/plans/" + planFileName(key));
  if (access(path.c_str(), F_OK) != 0) return {};
  LedgerFile ledger;
  std::string error;
  bool corrupt = false;
  if (!ledger.open(path, &error, &corrupt)) {
    warn("report: the run ledger is not used (%s)", error.c_str());
    return {};
  }
  return ledger.ledger();
}

// Why `hetopt run` declines the program now (empty: it plans), priced as it would be.
std::string declineReason(Db& db, const analyzer::AppProfile& profile) {
  analyzer::PlanOptions options;
  std::unique_ptr<analyzer::GainModel> gain =
      analyzer::loadGainModel(db, profile.device, &options.noCurves);
  Plan plan;
  std::string whyNot;
  if (analyzer::buildPlan(profile, options, gain.get(), &plan, &whyNot)) return {};
  return whyNot;
}

}  // namespace

int cmdReport(int argc, char** argv) {
  const CommandSpec& spec = commandSpec("report");
  ParsedArgs args;
  if (int rc = parseOrExit(spec, argc, argv, &args); rc >= 0) return rc;
  static_assert(kKeptRuns == 50, "the report --help text in command_specs.cpp says 50");
  const std::vector<std::string>& program = args.operands;
  const std::string dbPath = args.value("db", defaultDbPath()),
                    plotsDir = args.value("plots", "hetopt-plots");
  const bool noPlot = args.flag("no-plots"), json = args.flag("json");
  const size_t last = static_cast<size_t>(args.count("last", 5));
  std::string error;
  IdentifiedCommand command;
  if (!identifyForRun(program, {}, &command, &error)) {
    warn("report: %s", error.c_str());
    return 2;
  }
  // Reading creates nothing: no DB means nothing was ever traced into it, and making an empty one
  // (with its directory) would leave state behind for a question.
  if (access(dbPath.c_str(), F_OK) != 0) {
    warn("report: %s", whyNoProfile(command, Db::missingMessage(dbPath)).c_str());
    return 1;
  }
  // Writable: the run records move in.
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadWriteCreate, &error);
  if (!db) {
    warn("report: %s", error.c_str());
    return 2;
  }
  // The profile `hetopt run` of the same command line plans with.
  std::vector<Target> targets;
  if (const std::string none = findTargets(*db, command, &targets); !none.empty()) {
    warn("report: %s", none.c_str());
    return 1;
  }
  const Target& target = targets.front();
  const analyzer::AppProfile& profile = target.profile;
  if (targets.size() > 1)
    warn("report: %s starts %zu programs with profiles; this report is of the first, %s",
         command.label.c_str(), targets.size(), profile.program.describe().c_str());
  // The ledger and the control runs' records are the command's; an optimized run's record is
  // beside the plan of the program it optimized (the command's own, unless it is a launcher).
  const std::string commandKey = command.identity.key();
  const Ledger ledger = readLedger(commandKey);
  ingestRecords(*db, profile, target.profileId, commandKey, ledger);
  if (!target.self) ingestRecords(*db, profile, target.profileId, profile.program.key(), ledger);
  std::vector<analyzer::StoredRun> runs;
  if (!analyzer::loadRuns(*db, target.profileId, &runs, &error)) {
    warn("report: %s", error.c_str());
    return 2;
  }
  const analyzer::LoopReport loop = analyzer::loopReport(ledger);
  const std::string declined = loop.declined ? declineReason(*db, profile) : std::string();
  if (json) {
    fputs(analyzer::comparisonJson(profile, runs, loop, declined, last).c_str(), stdout);
    return 0;
  }
  fputs(analyzer::formatComparison(profile, runs, loop, declined, last).c_str(), stdout);
  const analyzer::MeasuredSaving measured = analyzer::measureSaving(profile, runs, loop, last);
  if (noPlot) return 0;
  runs = analyzer::newestRuns(runs, last);  // the runs shown
  // The date of the newest bar (the trace's when it is the only one), and the kinds of bars drawn.
  const std::string date = runs.empty()
                               ? profile.createdUtc.substr(0, 10)
                               : analyzer::utcTime(runs.back().record.startedUnixNs).substr(0, 10);
  const bool untouched = measured.untouched.count > 0, optimized = measured.optimized.count > 0;
  const std::string shown =
      !untouched && !optimized ? "the traced run"
      : untouched && optimized
          ? "traced, untouched and optimized runs"
          : std::string("traced and ") + (untouched ? "untouched" : "optimized") + " runs";
  const std::string title = analyzer::programLabel(profile.program) + " on " +
                            (profile.device.empty() ? "an unknown device" : profile.device) + ", " +
                            date + ": " + shown;
  analyzer::PlotOutput out;
  if (!analyzer::writeBreakdownPlot(plotsDir, analyzer::programSlug(profile.program) + "-report",
                                    title, analyzer::comparisonBars(profile, runs), &out, &error,
                                    analyzer::comparisonPlotNote(profile, runs))) {
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
