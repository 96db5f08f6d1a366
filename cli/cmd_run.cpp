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
#include "analyzer/profile_store.h"
#include "cli/run_plan.h"
#include "common/db.h"
#endif

namespace hetopt::cli {
namespace {

// Why the program runs untouched (empty: it is optimized) and, if optimized, the plan's path.
std::string preparePlan(const std::string& program, const std::string& dbPath,
                        const std::string& forcedPolicy, bool force, bool noPool,
                        std::string* planPath) {
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
  PlanOptions options;
  options.forcedPolicy = forcedPolicy;
  options.forceRegistrations = forcedPolicy == "register";
  options.ignoreEligibility = force;
  options.directAllocation = noPool;
  Plan plan;
  std::string whyNot;
  if (!buildPlan(profile, options, &plan, &whyNot)) return whyNot;
  // The shim identifies the program again; by this stamp it knows the file is the one identified
  // here without hashing it a second time.
  plan.hasProgramStamp = true;
  plan.programStamp = identity.stamp;
  std::string dir = cacheDirectory() + "/plans";
  if (!makePrivateDirs(dir, &error)) return error;
  *planPath = dir + "/" + identity.key().substr(identity.key().find(':') + 1) + ".plan";
  if (!writePlanFile(*planPath, plan, &error)) return error;
  return {};
#endif
}

}  // namespace

int cmdRun(int argc, char** argv) {
  bool passthrough = false, stats = false, force = false, noPool = false, help = false;
  std::string device, dbPath, policy, error;
  std::vector<std::string> program = splitProgram(
      argc, argv,
      [&](int i) -> int {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help = true, 1;
        if (!strcmp(argv[i], "--passthrough")) return passthrough = true, 1;
        if (!strcmp(argv[i], "--stats")) return stats = true, 1;
        if (!strcmp(argv[i], "--force")) return force = true, 1;
        if (!strcmp(argv[i], "--no-pool")) return noPool = true, 1;
        if (i + 1 >= argc) return 0;
        if (!strcmp(argv[i], "--device")) return device = argv[i + 1], 2;
        if (!strcmp(argv[i], "--db")) return dbPath = argv[i + 1], 2;
        if (!strcmp(argv[i], "--policy")) return policy = argv[i + 1], 2;
        return 0;
      },
      &error);
  if (help) {
    printf(
        "usage: hetopt run [options] [--] program [args...]\n\n"
        "Runs the program. With a profile from `hetopt trace` (same build of the program) whose\n"
        "candidate allocation sites gain on this machine according to `hetopt characterize`, those\n"
        "sites are served from a pinned pool prepared while the program starts, and static arrays\n"
        "and anonymous mappings that crossed are pinned in place; everything else is untouched.\n"
        "Without one the program runs untouched (no shim at all), after one line saying why.\n"
        "Once the program behaves unlike its profile (sizes, live memory, no transfers), no new\n"
        "allocation is redirected. Exit status and signals pass through.\n\n"
        "  --device FILTER  OpenCL device ('gpu', 'cpu' or a name substring); sets HETOPT_DEVICE\n"
        "  --stats          print what the shim did at exit (HETOPT_STATS=1)\n"
        "  --db PATH        profile/platform DB (default $HETOPT_DB, else ~/.local/share/hetopt)\n"
        "  --policy P       serve every candidate site from a P pool (opencl, hybrid, locked)\n"
        "                   whatever the curves say: for experiments; 'register' also registers\n"
        "                   every static array and anonymous mapping that crossed, in place\n"
        "                   (sites then get a hybrid pool)\n"
        "  --force          optimize even when the profile says the program is not eligible\n"
        "  --no-pool        no pool: allocate every candidate block with the policy itself, on\n"
        "                   the program's thread (the naive variant; plan line pool-mode direct)\n"
        "  --passthrough    load the shim but only forward every call (shows it is transparent)\n");
    return 0;
  }
  if (program.empty()) {
    warn("run: %s (see hetopt run --help)", error.c_str());
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
      preparePlan(program[0], dbPath.empty() ? defaultDbPath() : dbPath, policy, force, noPool,
                  &planPath);
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
