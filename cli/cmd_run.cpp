// SPDX-License-Identifier: MIT
/**
 * @file `hetopt run`: the every-day command. Looks up the program's profile (by its build id or
 * content hash) and, when it says transfers can get faster on this machine, writes the plan and
 * starts the program with the shim in optimize mode. Otherwise the program runs untouched (no shim
 * in the process), after one line saying why.
 */
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/launch.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/plan.h"
#include "common/program_identity.h"

#ifdef HETOPT_HAVE_ANALYZER
#include "analyzer/gain.h"
#include "analyzer/profile_store.h"
#include "cli/run_plan.h"
#include "common/db.h"
#endif

namespace hetopt::cli {
namespace {

struct PlanRequest {
  std::string policy;  ///< --policy
  bool force = false, noPool = false, dryRun = false, lateContext = false;
  mutable bool described = false;  ///< the dry run printed the whole decision
};

// Why the program runs untouched (empty: it is optimized) and, if optimized, the plan's path.
// With `dryRun` nothing is written: the decision is printed to stdout instead.
std::string preparePlan(const std::string& program, const std::string& dbPath,
                        const PlanRequest& request, std::string* planPath) {
#ifndef HETOPT_HAVE_ANALYZER
  return "this hetopt was built without the analyzer, so it has no profiles";
#else
  std::string error;
  std::string exe = resolveProgramPath(program);
  ProgramIdentity identity;
  if (exe.empty() || !programIdentity(exe, &identity, &error, identityCacheDir()))
    return "cannot identify " + program + (error.empty() ? "" : ": " + error);
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadOnly, &error);
  if (!db) return "no profile for " + identity.path + " (" + error + "); run `hetopt trace` on it first";
  analyzer::AppProfile profile;
  analyzer::ProfileLookup lookup;
  if (!analyzer::loadProfile(*db, identity, &profile, &lookup, &error)) return error;
  if (lookup.status == analyzer::ProfileLookup::Status::None)
    return "no profile for " + identity.path + "; run `hetopt trace` on it first";
  if (lookup.status == analyzer::ProfileLookup::Status::Stale)
    return "the profile of " + identity.path + " is for another build (" + lookup.storedKey +
           ", traced " + lookup.storedCreatedUtc + "); run `hetopt trace` on it again";
  // Priced with this machine's curves as they are now: a new characterization needs no re-trace.
  std::string noCurves;
  std::unique_ptr<analyzer::GainModel> gain = analyzer::loadGainModel(*db, profile.device, &noCurves);
  if (!gain && request.policy.empty()) {
    bool stored = false;
    for (const analyzer::CandidateSite& s : profile.candidates) stored |= s.gain.known;
    for (const analyzer::UntrackedMemory& u : profile.untracked) stored |= u.gain.known;
    if (!stored) return noCurves;
  }
  PlanOptions options;
  options.forcedPolicy = request.policy;
  options.forceRegistrations = request.policy == "register";
  options.force = request.force;
  options.directAllocation = request.noPool;
  options.earlyContext = !request.lateContext;
  Plan plan;
  PlanDecision decision;
  std::string whyNot;
  const bool planned = buildPlan(profile, options, gain.get(), &plan, &whyNot, &decision);
  if (request.dryRun) {
    if (decision.verdict.empty()) decision.verdict = whyNot;
    fputs(describeDecision(profile, plan, decision, planned).c_str(), stdout);
    request.described = true;
    return planned ? std::string() : whyNot;
  }
  if (!planned) return whyNot;
  // The shim identifies the program again; by this stamp it knows the file is the one identified
  // here without hashing it a second time.
  plan.hasProgramStamp = true;
  plan.programStamp = identity.stamp;
  std::string dir = cacheDirectory() + "/plans";
  if (!makePrivateDirs(dir, &error)) return error;
  *planPath = dir + "/" + identity.key().substr(identity.key().find(':') + 1) + ".plan";
  if (!writePlanFile(*planPath, plan, &error)) return error;
  warn("%s", planSummary(plan, decision).c_str());
  return {};
#endif
}

}  // namespace

int cmdRun(int argc, char** argv) {
  bool passthrough = false, stats = false, help = false;
  PlanRequest request;
  std::string device, dbPath, error;
  std::vector<std::string> program = splitProgram(
      argc, argv,
      [&](int i) -> int {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help = true, 1;
        if (!strcmp(argv[i], "--passthrough")) return passthrough = true, 1;
        if (!strcmp(argv[i], "--stats")) return stats = true, 1;
        if (!strcmp(argv[i], "--force")) return request.force = true, 1;
        if (!strcmp(argv[i], "--no-pool")) return request.noPool = true, 1;
        if (!strcmp(argv[i], "--dry-run")) return request.dryRun = true, 1;
        if (!strcmp(argv[i], "--no-early-context")) return request.lateContext = true, 1;
        if (i + 1 >= argc) return 0;
        if (!strcmp(argv[i], "--device")) return device = argv[i + 1], 2;
        if (!strcmp(argv[i], "--db")) return dbPath = argv[i + 1], 2;
        if (!strcmp(argv[i], "--policy")) return request.policy = argv[i + 1], 2;
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
        "  --dry-run        print the plan (each candidate site: where, how much, strategy, when it\n"
        "                   pins, predicted saving and why) and the decision; run nothing\n"
        "  --device FILTER  OpenCL device ('gpu', 'cpu' or a name substring); sets HETOPT_DEVICE\n"
        "  --stats          print what the shim did at exit (HETOPT_STATS=1)\n"
        "  --db PATH        profile/platform DB (default $HETOPT_DB, else ~/.local/share/hetopt)\n"
        "  --policy P       pin every candidate site with P whatever the prices say, for\n"
        "                   experiments: a pool of P (opencl, hybrid, locked), or 'register': each\n"
        "                   block registered in place, and every static array and anonymous\n"
        "                   mapping that crossed too\n"
        "  --force          optimize even when the predicted saving is below the minimums\n"
        "  --no-pool        no pool: allocate every candidate block with the policy itself, on\n"
        "                   the program's thread (the naive variant; plan line pool-mode direct)\n"
        "  --no-early-context  pin only in the context the program makes, when it makes it (by\n"
        "                   default a program that makes one context gets it made at start-up)\n"
        "  --passthrough    load the shim but only forward every call (shows it is transparent)\n");
    return 0;
  }
  if (program.empty()) {
    warn("run: %s (see hetopt run --help)", error.c_str());
    return 2;
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
  std::string planPath;
  std::string whyNot =
      preparePlan(program[0], dbPath.empty() ? defaultDbPath() : dbPath, request, &planPath);
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
  if (stats) launch.env.push_back({"HETOPT_STATS", "1"});
  return execProgram(launch);
}

}  // namespace hetopt::cli
