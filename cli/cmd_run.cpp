// SPDX-License-Identifier: MIT
/**
 * @file `hetopt run`: the every-day command. Looks up the program's profile (by its build id or
 * content hash) and, when it says transfers can get faster on this machine, writes the plan and
 * starts the program with the shim in optimize mode. Otherwise the program runs untouched (no shim
 * in the process), after one line saying why. `--untouched` runs it so on purpose and records the
 * run (contracts/run_record.h) for `hetopt report` to measure the optimized runs against.
 */
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/launch.h"
#include "common/elf_imports.h"
#include "common/log.h"
#include "common/paths.h"
#include "contracts/plan.h"
#include "common/program_identity.h"
#include "contracts/run_record.h"
#include "hetopt/version.h"

#ifdef HETOPT_HAVE_ANALYZER
#include "analyzer/gain.h"
#include "analyzer/profile_store.h"
#include "analyzer/planner.h"
#include "common/db.h"
#endif

namespace hetopt::cli {
namespace {

struct PlanRequest {
  std::string policy;       ///< --policy
  std::string profileName;  ///< --profile
  bool force = false, noPool = false, dryRun = false, lateContext = false;
  mutable bool described = false;  ///< the dry run printed the whole decision
};

#ifdef HETOPT_HAVE_ANALYZER
/// A program to plan for: the command itself, or a process its launcher record names.
struct Target {
  analyzer::AppProfile profile;
  bool self = true;     ///< the command's own process (the plan names it as it is now)
  uint64_t pid = 0;     ///< launched: its pid when traced
};

/// Whether the program a stored profile names is still the same file(s) here; else *why.
bool unchangedSince(const ProgramIdentity& stored, std::string* why) {
  ProgramIdentity now;
  std::string error;
  if (!programIdentity(stored.path, &now, &error, identityCacheDir()))
    return *why = "cannot identify " + stored.path + ": " + error, false;
  if (now.executableKey() != stored.executableKey())
    return *why = stored.path + " changed since it was traced", false;
  if (stored.script.kind != ScriptRef::Kind::File) return true;
  std::string resolved, hash;
  if (!fileContentHash(stored.script.name, &resolved, &hash, &error, identityCacheDir()))
    return *why = "cannot read " + stored.script.name + ": " + error, false;
  if (hash != stored.script.hash) return *why = stored.script.name + " changed since it was traced", false;
  return true;
}

// The launched programs a launcher record names, each with its profile, unless it changed since.
std::string loadLaunched(Db& db, const analyzer::LauncherRecord& record,
                         const ProgramIdentity& identity, std::vector<Target>* targets) {
  std::string error, reasons;
  for (const analyzer::LaunchedProgram& l : record.launched) {
    Target t;
    t.pid = l.pid;
    t.self = l.key == record.launcherKey;
    analyzer::ProfileLookup lookup;
    if (!analyzer::loadProfileAt(db, l.profilePath, l.key, &t.profile, &lookup, &error)) return error;
    std::string why;
    if (lookup.status != analyzer::ProfileLookup::Status::Found)
      why = "its profile is gone from the DB";
    else if (!t.self && identity.profileName.empty() && !unchangedSince(t.profile.program, &why))
      why += "; run `hetopt trace` on " + identity.describe() + " again";
    if (why.empty()) {
      targets->push_back(std::move(t));
      continue;
    }
    reasons += (reasons.empty() ? "" : "; ") + l.description + ": " + why;
  }
  if (targets->empty()) return "no profile to use for what " + identity.describe() + " runs (" + reasons + ")";
  if (!reasons.empty()) warn("not optimizing %s", reasons.c_str());
  return {};
}

// The profiles to plan for: the command's own, else (a wrapper, a launcher) those of the
// processes it started that made OpenCL calls, as `hetopt trace` linked them; with --profile the
// named one(s). Empty with the reason the command runs untouched.
std::string findTargets(Db& db, const ProgramIdentity& identity, std::vector<Target>* targets) {
  std::string error;
  const bool named = !identity.profileName.empty();
  if (!named) {
    // A launcher record first: it names the command's own profile too when the command made
    // OpenCL calls beside the processes it started.
    analyzer::LauncherRecord record;
    bool found = false;
    if (!analyzer::loadLauncher(db, identity.profilePath(), identity.key(), &record, &found, &error))
      return error;
    if (found) return loadLaunched(db, record, identity, targets);
    Target own;
    analyzer::ProfileLookup lookup;
    if (!analyzer::loadProfile(db, identity, &own.profile, &lookup, &error)) return error;
    if (lookup.status == analyzer::ProfileLookup::Status::Found) {
      targets->push_back(std::move(own));
      return {};
    }
    if (lookup.status == analyzer::ProfileLookup::Status::Stale)
      return "the profile of " + identity.describe() + " is for another build (" + lookup.storedKey +
             ", traced " + lookup.storedCreatedUtc + "); run `hetopt trace` on it again";
    return "no profile for " + identity.describe() + "; run `hetopt trace` on it first";
  }
  analyzer::LauncherRecord record;
  bool found = false;
  if (!analyzer::loadLauncher(db, identity.profilePath(), {}, &record, &found, &error)) return error;
  if (!found)
    return "no profile named '" + identity.profileName + "'; run `hetopt trace --profile " +
           identity.profileName + "` first";
  if (record.launcherKey != identity.key())
    warn("the profile '%s' was traced from another program or build (%s, %s); %s is %s: using "
         "it as asked (sites of a rebuilt binary will not match; trace again if it changed)",
         identity.profileName.c_str(), record.launcherKey.c_str(), record.createdUtc.c_str(),
         identity.describe().c_str(), identity.key().c_str());
  return loadLaunched(db, record, identity, targets);
}

// One target's plan: written (its path in *planPath), or printed with --dry-run. Empty, or why the
// target runs untouched.
std::string planTarget(Db& db, const Target& target, const ProgramIdentity& identity,
                       const std::vector<std::string>& command, const PlanRequest& request,
                       std::string* planPath) {
  const analyzer::AppProfile& profile = target.profile;
  // Priced with this machine's curves as they are now: a new characterization needs no re-trace.
  std::string noCurves;
  std::unique_ptr<analyzer::GainModel> gain = analyzer::loadGainModel(db, profile.device, &noCurves);
  if (!gain && request.policy.empty()) {
    bool stored = false;
    for (const analyzer::CandidateSite& s : profile.candidates) stored |= s.gain.known;
    for (const analyzer::UntrackedMemory& u : profile.untracked) stored |= u.gain.known;
    if (!stored) return noCurves;
  }
  analyzer::PlanOptions options;
  options.forcedPolicy = request.policy;
  options.forceRegistrations = request.policy == "register";
  options.force = request.force;
  options.directAllocation = request.noPool;
  options.earlyContext = !request.lateContext;
  // The plan's file, by the key the plan is written under (the command as it is now, for itself).
  const std::string plansDir = cacheDirectory() + "/plans";
  const std::string planKey = target.self ? identity.key() : profile.program.key();
  const std::string planFile = plansDir + "/" + planFileName(planKey);
  options.forkedWhenOptimized = access(forkMarkerPath(planFile).c_str(), F_OK) == 0;
  std::string unread;  // a file that cannot be read here is left to the shim's check at start-up
  options.forkImporter =
      fileImporting(target.self ? identity.path : profile.program.path, kForkFunctions, &unread);
  Plan plan;
  analyzer::PlanDecision decision;
  std::string whyNot, error;
  const bool planned = analyzer::buildPlan(profile, options, gain.get(), &plan, &whyNot, &decision);
  if (target.self) {
    // The command as it is now (a named profile may come from another build). The shim knows by
    // the stamp that the file is the one identified here without hashing it a second time.
    plan.programPath = identity.path;
    plan.programKey = planKey;
    plan.hasProgramStamp = true;
    plan.programStamp = identity.stamp;
  }
  plan.predictedSavingNs = static_cast<uint64_t>(decision.netSavingNs());  // the run record's
  const std::string launched =
      target.self ? std::string()
                  : "for " + profile.program.describe() + ", which " + command[0] +
                        " starts (pid " + std::to_string(target.pid) + " when traced)";
  if (request.dryRun) {
    if (decision.verdict.empty()) decision.verdict = whyNot;
    if (!launched.empty()) printf("launched: this plan is %s\n", launched.c_str());
    fputs(analyzer::describeDecision(profile, plan, decision, planned).c_str(), stdout);
    request.described = true;
    return planned ? std::string() : whyNot;
  }
  if (!planned) return whyNot;
  if (!makePrivateDirs(plansDir, &error)) return error;
  *planPath = planFile;
  if (!writePlanFile(*planPath, plan, &error)) return error;
  warn("%s%s", launched.empty() ? "" : (launched + ": ").c_str(), analyzer::planSummary(plan, decision).c_str());
  return {};
}
#endif

// Why the program runs untouched (empty: it is optimized) and, if optimized, the plan files (one,
// or one per launched program, ':'-separated). With `dryRun` nothing is written: the decision is
// printed to stdout instead.
std::string preparePlan(const std::vector<std::string>& command, const std::string& dbPath,
                        const PlanRequest& request, std::string* planFiles) {
#ifndef HETOPT_HAVE_ANALYZER
  return "this hetopt was built without the analyzer, so it has no profiles";
#else
  std::string error;
  ProgramIdentity identity;
  if (!commandIdentity(command, &identity, &error, identityCacheDir()))
    return "cannot identify " + command[0] + (error.empty() ? "" : ": " + error);
  identity.profileName = request.profileName;
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadOnly, &error);
  if (!db) return "no profile for " + identity.describe() + " (" + error + "); run `hetopt trace` on it first";
  std::vector<Target> targets;
  std::string whyNot = findTargets(*db, identity, &targets);
  if (!whyNot.empty()) return whyNot;
  std::string reasons;
  for (const Target& t : targets) {
    std::string path;
    std::string why = planTarget(*db, t, identity, command, request, &path);
    if (!why.empty()) {
      reasons += (reasons.empty() ? "" : "; ") + (t.self ? why : t.profile.program.describe() + ": " + why);
      continue;
    }
    if (!path.empty()) *planFiles += (planFiles->empty() ? "" : ":") + path;
  }
  if (!request.dryRun && planFiles->empty()) return reasons;
  if (!reasons.empty() && !request.dryRun) warn("not optimizing %s", reasons.c_str());
  return request.dryRun ? reasons : std::string();
#endif
}

// The plan file beside which an untouched run of `command` is recorded (the one `hetopt run`
// writes for it, whether or not it exists); empty with why nothing is recorded.
std::string untouchedRecordPlace(const std::vector<std::string>& command, const std::string& dbPath,
                                 std::string* programKey, std::string* whyNot) {
#ifndef HETOPT_HAVE_ANALYZER
  (void)command, (void)dbPath, (void)programKey;
  *whyNot = "this hetopt was built without the analyzer, so it has no profiles";
  return {};
#else
  std::string error;
  ProgramIdentity identity;
  if (!commandIdentity(command, &identity, &error, identityCacheDir()))
    return *whyNot = "cannot identify " + command[0] + (error.empty() ? "" : ": " + error), std::string();
  // `hetopt report` compares runs with the program's current profile: without one, a record
  // would never be read.
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadOnly, &error);
  analyzer::AppProfile profile;
  analyzer::ProfileLookup lookup;
  if (db && !analyzer::loadProfile(*db, identity, &profile, &lookup, &error)) db.reset();
  if (!db || lookup.status != analyzer::ProfileLookup::Status::Found)
    return *whyNot = "no current profile for " + identity.describe() + (db ? "" : " (" + error + ")") +
                     "; `hetopt trace` it first",
           std::string();
  const std::string plansDir = cacheDirectory() + "/plans";
  if (!makePrivateDirs(plansDir, &error)) return *whyNot = error, std::string();
  *programKey = identity.key();
  return plansDir + "/" + planFileName(identity.key());
#endif
}

// `hetopt run --untouched`: the program exactly as natively (no shim, same arguments, standard
// streams, exit status or death signal), timed from just before it starts until it is reaped,
// and recorded beside its plan when it exits (a run ended by a signal is not a whole run, and an
// optimized one leaves no record then either).
int runUntouched(const std::vector<std::string>& program, const std::string& dbPath) {
  Launch launch;
  launch.argv = program;
  launch.preloadShim = false;
  std::string programKey, whyNot, error;
  const std::string planPath = untouchedRecordPlace(program, dbPath, &programKey, &whyNot);
  dropShimFromEnvironment();
  if (planPath.empty()) {
    warn("%s; running the program untouched, and this run is not recorded", whyNot.c_str());
    return execProgram(launch);
  }
  TimedRun run;
  if (!runTimed(launch, &run, &error)) {
    warn("run: %s", error.c_str());
    return 2;
  }
  if (run.notStarted) return run.notStarted;  // execProgram said why
  if (WIFEXITED(run.status)) {
    RunRecord record;
    record.kind = RunKind::Untouched;
    record.writer = HETOPT_VERSION_STRING;
    record.programKey = programKey;
    record.pid = run.pid;
    record.startedUnixNs = run.startedUnixNs;
    record.wallNs = run.wallNs;
    record.exitStatus = static_cast<uint64_t>(WEXITSTATUS(run.status));
    if (!writeRunRecordFile(runRecordPath(planPath, run.pid, run.startedUnixNs), record, &error))
      warn("run: the untouched run is not recorded: %s", error.c_str());
  } else if (WIFSIGNALED(run.status)) {
    warn("run: the program ended by signal %d; the untouched run is not recorded (only runs that "
         "exit are, as for optimized runs)", WTERMSIG(run.status));
  }
  exitLikeChild(run.status);
}

}  // namespace

int cmdRun(int argc, char** argv) {
  bool passthrough = false, stats = false, help = false, untouched = false;
  PlanRequest request;
  std::string device, dbPath, statsJson, error;
  std::vector<std::string> program = splitProgram(
      argc, argv,
      [&](int i) -> int {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help = true, 1;
        if (!strcmp(argv[i], "--passthrough")) return passthrough = true, 1;
        if (!strcmp(argv[i], "--untouched")) return untouched = true, 1;
        if (!strcmp(argv[i], "--stats")) return stats = true, 1;
        if (!strncmp(argv[i], "--stats=", 8)) return statsJson = argv[i] + 8, 1;
        if (!strcmp(argv[i], "--force")) return request.force = true, 1;
        if (!strcmp(argv[i], "--no-pool")) return request.noPool = true, 1;
        if (!strcmp(argv[i], "--dry-run")) return request.dryRun = true, 1;
        if (!strcmp(argv[i], "--no-early-context")) return request.lateContext = true, 1;
        if (i + 1 >= argc) return 0;
        if (!strcmp(argv[i], "--device")) return device = argv[i + 1], 2;
        if (!strcmp(argv[i], "--db")) return dbPath = argv[i + 1], 2;
        if (!strcmp(argv[i], "--policy")) return request.policy = argv[i + 1], 2;
        if (!strcmp(argv[i], "--profile")) return request.profileName = argv[i + 1], 2;
        return 0;
      },
      &error);
  if (help) {
    printf(
        "usage: hetopt run [options] [--] program [args...]\n\n"
        "Runs the program. With a profile from `hetopt trace` (same build of the program), the\n"
        "allocation sites whose memory feeds transfers are pinned where that pays on this machine\n"
        "(priced from the traced transfer times and the curves of `hetopt characterize`): large,\n"
        "long-lived blocks registered in place on a background thread, repeatedly allocated ones\n"
        "served from a pinned pool; static arrays and anonymous mappings that crossed are pinned\n"
        "in place; everything else is untouched, and no transfer waits for pinning longer than\n"
        "pageable memory would have cost. Otherwise the program runs untouched (no shim at all),\n"
        "after one line saying which number decided. Once the program behaves unlike its profile\n"
        "(sizes, live memory, no transfers), no new allocation is redirected. Exit status and\n"
        "signals pass through.\n\n"
        "A program that made no OpenCL calls itself when traced (a wrapper script that execs the\n"
        "real program, a launcher) is run with the shim waiting in every process it starts: the\n"
        "ones whose profiles `hetopt trace` linked to it are optimized, every other process runs\n"
        "untouched. An interpreter's profile is its script's (module's, code's) own.\n\n"
        "  --dry-run        print the plan (each candidate site: where, how much, strategy, when it\n"
        "                   pins, predicted saving and why) and the decision; run nothing\n"
        "  --device FILTER  OpenCL device ('gpu', 'cpu' or a name substring); sets HETOPT_DEVICE\n"
        "  --stats          print what the shim did at exit (HETOPT_STATS=1)\n"
        "  --stats=FILE.json  write the same facts as JSON to FILE.json at exit (fields: README,\n"
        "                   \"Run statistics as JSON\"); with --stats too, both\n"
        "  --db PATH        profile/platform DB (default $HETOPT_DB, else ~/.local/share/hetopt)\n"
        "  --profile NAME   use the profile `hetopt trace --profile NAME` stored, even if the\n"
        "                   program changed since (said on stderr)\n"
        "  --policy P       pin every candidate site with P whatever the prices say, for\n"
        "                   experiments: a pool of P (opencl, hybrid, locked), or 'register': each\n"
        "                   block registered in place, and every static array and anonymous\n"
        "                   mapping that crossed too\n"
        "  --force          optimize even when the predicted saving is below the minimums\n"
        "  --no-pool        no pool: allocate every candidate block with the policy itself, on\n"
        "                   the program's thread (the naive variant; plan line pool-mode direct)\n"
        "  --no-early-context  pin only in the context the program makes, when it makes it (by\n"
        "                   default a program that makes one context gets it made at start-up)\n"
        "  --passthrough    load the shim but only forward every call (shows it is transparent)\n"
        "  --untouched      run the program exactly as natively (no shim, no plan) and record its\n"
        "                   wall time and exit status beside its plan, for `hetopt report` to\n"
        "                   measure the optimized runs against (needs the program's profile; a\n"
        "                   run ended by a signal is not recorded); takes no option but --db\n");
    return 0;
  }
  if (program.empty()) {
    warn("run: %s (see hetopt run --help)", error.c_str());
    return 2;
  }
  if (untouched) {
    if (passthrough || stats || !statsJson.empty() || request.force || request.noPool || request.dryRun ||
        request.lateContext || !device.empty() || !request.policy.empty() || !request.profileName.empty()) {
      warn("run: --untouched runs the program as natively: it takes no option but --db");
      return 2;
    }
    return runUntouched(program, dbPath.empty() ? defaultDbPath() : dbPath);
  }
  const std::string& p = request.policy;
  if (!p.empty() && p != "opencl" && p != "hybrid" && p != "locked" && p != "register") {
    warn("run: --policy %s: not a pinning policy (opencl, hybrid, locked or register)",
         request.policy.c_str());
    return 2;
  }
  Launch launch;
  launch.argv = program;
  if (!device.empty()) launch.env.push_back({"HETOPT_DEVICE", device});
  if (passthrough) {
    launch.env.push_back({"HETOPT_MODE", "off"});
    return execProgram(launch);
  }
  if (!request.profileName.empty() && !validProfileName(request.profileName)) {
    warn("run: --profile %s: a name is letters, digits and . _ - (at most 100)",
         request.profileName.c_str());
    return 2;
  }
  std::string planPath;
  std::string whyNot =
      preparePlan(program, dbPath.empty() ? defaultDbPath() : dbPath, request, &planPath);
  if (request.dryRun) {
    if (!whyNot.empty() && !request.described) printf("decline: %s\n", whyNot.c_str());
    return 0;
  }
  if (!whyNot.empty()) {
    warn("%s; running unoptimized", whyNot.c_str());
    launch.preloadShim = false;
    return execProgram(launch);
  }
  launch.env.push_back({"HETOPT_MODE", "optimize"});
  launch.env.push_back({"HETOPT_PLAN_FILE", planPath});
  // The program runs in this process (exec): its run record counts from hetopt's start, as an
  // untouched run's does.
  launch.env.push_back({"HETOPT_RUN_STARTED", std::to_string(getpid()) + ":" + std::to_string(hetoptStartedNs())});
  if (stats) launch.env.push_back({"HETOPT_STATS", "1"});
  if (!statsJson.empty()) {
    // The program may change its directory before it exits.
    if (statsJson[0] != '/') {
      char cwd[4096];
      if (getcwd(cwd, sizeof cwd)) statsJson = std::string(cwd) + "/" + statsJson;
    }
    launch.env.push_back({"HETOPT_STATS_JSON", statsJson});
  }
  return execProgram(launch);
}

}  // namespace hetopt::cli
