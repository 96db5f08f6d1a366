// SPDX-License-Identifier: MIT
/**
 * @file The closed loop of `hetopt run` (analyzer/closed_loop.h decides, this file runs): the
 * program as hetopt's child, timed from hetopt's start until it is reaped, its run in the ledger
 * (contracts/run_ledger.h) and its record beside its plan (contracts/run_record.h); a failed run's
 * revert and a changed verdict said in one line each. See docs/ARCHITECTURE.md, "The closed loop".
 */
#include "cli/run_loop.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "analyzer/closed_loop.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "contracts/plan.h"
#include "contracts/run_ledger.h"
#include "contracts/run_record.h"
#include "hetopt/version.h"

namespace hetopt::cli {
namespace {

// How a timed run ended, for the ledger and its record.
struct Ending {
  RunEnd end = RunEnd::Lost;
  uint64_t code = 0;
};
Ending endingOf(const TimedRun& run) {
  Ending e;
  if (WIFEXITED(run.status)) e = {RunEnd::Exited, static_cast<uint64_t>(WEXITSTATUS(run.status))};
  if (WIFSIGNALED(run.status)) e = {RunEnd::Signaled, static_cast<uint64_t>(WTERMSIG(run.status))};
  if (run.interrupted) e.end = RunEnd::Interrupted;  // the user stopped it: no verdict from it
  return e;
}

// The ledger, opened and locked; null after one warning when it cannot be used (a corrupt one is
// moved aside first: the next run starts a new one, and nothing else is lost).
std::unique_ptr<LedgerFile> openLedger(const std::string& path) {
  auto ledger = std::make_unique<LedgerFile>();
  std::string error;
  bool corrupt = false;
  if (makePrivateDirs(dirName(path), &error) && ledger->open(path, &error, &corrupt)) return ledger;
  std::string aside;
  if (corrupt && !setLedgerAside(path, &aside)) error += "; " + aside;
  warn("the run ledger cannot be used (%s)%s", error.c_str(),
       corrupt ? "; it is moved aside (.corrupt) and the next run starts a new one" : "");
  return nullptr;
}

// Runs the program as hetopt's child, timed from hetopt's start until it is reaped, with its run
// `seq` in the ledger at `ledgerFile` ended after it. Returns the wait status, or -1 with nothing
// run (said); *run is filled.
int runAndLedger(const Launch& launch, const std::string& ledgerFile, uint64_t seq, TimedRun* run) {
  std::string error;
  if (!runTimed(launch, run, &error)) {
    warn("run: %s", error.c_str());
    return -1;
  }
  const Ending e = run->notStarted ? Ending{} : endingOf(*run);
  if (seq) {
    std::unique_ptr<LedgerFile> ledger = openLedger(ledgerFile);
    if (ledger && !ledger->finish(seq, run->pid, run->wallNs, e.end, e.code, &error))
      warn("run: the run's end is not in the ledger: %s", error.c_str());
  }
  return run->status;
}

// The record of a run hetopt timed, beside `planPath`: a control run's (untouched), or an
// optimized run's that the shim could not write (a signal, _exit or exec ended the program before
// its exit handler): its ending and its plan's prediction, with no transfers.
void recordRun(RunKind kind, const std::string& planPath, const std::string& programKey,
               uint64_t planId, const TimedRun& run, uint64_t seq, uint64_t predictedNs = 0) {
  const Ending e = endingOf(run);
  if (e.end == RunEnd::Lost) return;
  RunRecord record;
  record.kind = kind;
  record.writer = HETOPT_VERSION_STRING;
  record.programKey = programKey;
  record.planId = planId;
  record.predictedSavingNs = static_cast<double>(predictedNs);
  record.pid = run.pid;
  record.startedUnixNs = run.startedUnixNs;
  record.wallNs = run.wallNs;
  record.seq = seq;
  if (WIFSIGNALED(run.status))
    record.signal = e.code;
  else
    record.exited = true, record.exitStatus = e.code;
  if (run.interrupted)
    record.note = "interrupted";
  else if (kind == RunKind::Optimized)
    record.note = "no-shim-record";
  std::string error;
  if (!writeRunRecordFile(runRecordPath(planPath, run.pid, run.startedUnixNs), record, &error))
    warn("run: the %s run is not recorded: %s", runKindName(kind), error.c_str());
}

// Whether the shim left a run record for process `pid` beside the plan at `planPath`.
bool shimRecorded(const std::string& planPath, uint64_t pid) {
  const std::string prefix = baseName(runRecordPrefix(planPath)) + std::to_string(pid) + "-";
  DIR* d = opendir(dirName(planPath).c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) found |= strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
  closedir(d);
  return found;
}

// Appends a run that is not timed (declined, or a reverted plan's) to the ledger.
void ledgerUntimed(const std::string& path, LedgerKind kind, uint64_t planId) {
  if (path.empty()) return;
  std::unique_ptr<LedgerFile> ledger = openLedger(path);
  uint64_t seq = 0;
  std::string error;
  if (ledger && !ledger->start(kind, planId, clockNs(CLOCK_REALTIME),
                               static_cast<uint64_t>(getpid()), &seq, &error))
    debug("run: not in the ledger: %s", error.c_str());
}

// After a timed run: a failed run reverts its plan at once, and a verdict that changed is said,
// each in one line.
void sayWhatChanged(const PreparedRun& prepared, const analyzer::NextRun& before,
                    const std::string& program) {
  std::unique_ptr<LedgerFile> ledger = openLedger(prepared.ledger);
  if (!ledger) return;
  const std::vector<uint64_t> ids = prepared.ids();
  const std::vector<analyzer::LedgerPair> pairs = analyzer::pairRuns(ledger->ledger());
  std::string error;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ledger->ledger().reverted(ids[i])) continue;
    const analyzer::Failure f = analyzer::findFailure(ledger->ledger(), pairs, ids[i]);
    if (!f.failed) continue;
    if (!ledger->revert(ids[i], f.run->seq, "failed", &error)) warn("run: %s", error.c_str());
    warn(
        "an optimized run of %s (pid %llu) ended unlike the program does untouched: %s. Its plan "
        "is "
        "reverted: %s runs untouched from now on (a new `hetopt trace` or `hetopt characterize` "
        "plans "
        "again; `hetopt report` shows the runs)",
        program.c_str(), static_cast<unsigned long long>(f.run->pid), f.what.c_str(),
        program.c_str());
    return;
  }
  const std::vector<analyzer::PlanStanding> now = analyzer::standings(ledger->ledger(), pairs, ids);
  for (size_t i = 0; i < now.size() && i < before.chain.size(); ++i) {
    const analyzer::Verdict &was = before.chain[i].verdict, &is = now[i].verdict;
    if (was.state == is.state && was.optimizes() == is.optimizes()) continue;
    const std::string which = i == 0 ? "the plan" : "the smaller plan " + std::to_string(i);
    std::string then =
        is.optimizes() ? "it stays (one run in " + std::to_string(analyzer::kWatchEvery) +
                             " is still a control run)"
        : i + 1 < ids.size() ? "the next runs try the smaller plan " + std::to_string(i + 1)
                             : "from now on " + program + " runs untouched";
    warn("verdict on %s of %s: %s, %s; %s", which.c_str(), program.c_str(),
         analyzer::verdictStateName(is.state), analyzer::describeVerdict(is).c_str(), then.c_str());
  }
}

}  // namespace

int runControl(const Launch& launch, const std::string& planPath, const std::string& programKey) {
  uint64_t seq = 0;
  std::string error;
  if (std::unique_ptr<LedgerFile> ledger = openLedger(ledgerPath(planPath)))
    if (!ledger->start(LedgerKind::Control, 0, clockNs(CLOCK_REALTIME),
                       static_cast<uint64_t>(getpid()), &seq, &error))
      warn("run: the run is not in the ledger: %s", error.c_str());
  TimedRun run;
  if (runAndLedger(launch, ledgerPath(planPath), seq, &run) == -1) return 2;
  if (run.notStarted) return run.notStarted;  // execProgram said why
  recordRun(RunKind::Untouched, planPath, programKey, 0, run, seq);
  exitLikeChild(run.status);
}

void ledgerDeclined(const std::string& path) { ledgerUntimed(path, LedgerKind::Declined, 0); }

std::string loopStanding(const PreparedRun& prepared, bool verify, bool statsAsked) {
  if (!verify) return "verify: off: runs are neither timed nor kept (no control runs)";
  Ledger empty;
  LedgerFile file;
  std::string error;
  bool corrupt = false;
  const bool opened =
      access(prepared.ledger.c_str(), F_OK) == 0 && file.open(prepared.ledger, &error, &corrupt);
  const Ledger& ledger = opened ? file.ledger() : empty;
  const analyzer::NextRun next = analyzer::nextRun(ledger, prepared.ids(), statsAsked);
  std::string s = "verify:";
  for (size_t i = 0; i < next.chain.size(); ++i)
    s += std::string(i ? ";" : "") + " " +
         (i ? "smaller plan " + std::to_string(i) : std::string("the plan")) + " " +
         (next.chain[i].failed
              ? "reverted (a run failed)"
              : std::string(analyzer::verdictStateName(next.chain[i].verdict.state)) + " (" +
                    analyzer::describeVerdict(next.chain[i].verdict) + ")");
  if (!error.empty()) s += "; the ledger cannot be read: " + error;
  return s + "; the next run is " +
         (next.kind == analyzer::NextKind::Optimized
              ? (next.variant ? "optimized with smaller plan " + std::to_string(next.variant)
                              : std::string("optimized"))
          : next.kind == analyzer::NextKind::Control
              ? "a control run (untouched, timed)"
              : "untouched: " + analyzer::whyUntouched(ledger, next));
}

int runVerified(Launch launch, const PreparedRun& prepared, bool statsAsked) {
  const std::vector<uint64_t> ids = prepared.ids();
  std::unique_ptr<LedgerFile> ledger = openLedger(prepared.ledger);
  if (!ledger) {
    warn("running %s unoptimized", launch.argv[0].c_str());
    launch.preloadShim = false;
    dropShimFromEnvironment();
    return execProgram(launch);
  }
  const analyzer::NextRun next = analyzer::nextRun(ledger->ledger(), ids, statsAsked);
  const PreparedRun::Step& step = prepared.chain[next.variant];
  const analyzer::PlanStanding& standing = next.chain[next.variant];
  const LedgerKind kind = next.kind == analyzer::NextKind::Optimized ? LedgerKind::Optimized
                          : next.kind == analyzer::NextKind::Control ? LedgerKind::Control
                                                                     : LedgerKind::Untouched;
  uint64_t seq = 0;
  std::string error;
  if (!ledger->start(kind, kind == LedgerKind::Untouched ? ids[0] : step.id,
                     clockNs(CLOCK_REALTIME), static_cast<uint64_t>(getpid()), &seq, &error)) {
    warn("run: %s; running %s unoptimized", error.c_str(), launch.argv[0].c_str());
    seq = 0;
  }
  const Ledger seen = ledger->ledger();
  ledger.reset();  // unlocked while the program runs
  if (kind == LedgerKind::Untouched || !seq) {
    if (seq)
      warn("not optimizing %s: %s", launch.argv[0].c_str(),
           analyzer::whyUntouched(seen, next).c_str());
    launch.preloadShim = false;
    dropShimFromEnvironment();
    return execProgram(launch);
  }
  const std::string verdict = analyzer::describeVerdict(standing.verdict);
  if (kind == LedgerKind::Control) {
    warn(
        "control run: %s runs untouched this time, timed against the optimized runs beside it (the "
        "plan is "
        "%s: %s; `hetopt report` shows the verdict, --verify=off skips control runs)",
        launch.argv[0].c_str(), analyzer::verdictStateName(standing.verdict.state),
        verdict.c_str());
    launch.preloadShim = false;
    dropShimFromEnvironment();
  } else {
    warn("%s (the plan is %s)", step.summary.c_str(),
         analyzer::describeStanding(standing.verdict, statsAsked).c_str());
    launch.env.push_back({"HETOPT_MODE", "optimize"});
    launch.env.push_back({"HETOPT_PLAN_FILE", step.planFiles});
    launch.env.push_back({"HETOPT_RUN_SEQ", std::to_string(seq)});
  }
  TimedRun run;
  if (runAndLedger(launch, prepared.ledger, seq, &run) == -1) return 2;
  if (run.notStarted) return run.notStarted;
  if (kind == LedgerKind::Control) {
    recordRun(RunKind::Untouched, prepared.commandPlan, prepared.programKey, 0, run, seq);
  } else if (step.planFiles.find(':') == std::string::npos &&
             !shimRecorded(step.planFiles, run.pid)) {
    // One program, hetopt's child: it left no record of its own. The record is its plan's
    // program's (a launcher's is the program it started), as the shim's would be.
    Plan plan;
    const bool read = readPlanFile(step.planFiles, &plan, &error);
    recordRun(RunKind::Optimized, step.planFiles, read ? plan.programKey : prepared.programKey,
              step.id, run, seq, read ? plan.predictedSavingNs : 0);
  }
  sayWhatChanged(prepared, next, launch.argv[0]);
  exitLikeChild(run.status);
}

}  // namespace hetopt::cli
