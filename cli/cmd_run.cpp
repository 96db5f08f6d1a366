// SPDX-License-Identifier: MIT
/**
 * @file `hetopt run`: the every-day command. Looks up the program's profile (by its build id or
 * content hash) and, when it says transfers can get faster on this machine, writes the plan and
 * starts the program with the shim in optimize mode; otherwise the program runs untouched (no
 * shim), after one line saying why. Every run of a planned program is also a measurement (the
 * closed loop, analyzer/closed_loop.h), timed and kept in its ledger until a verdict keeps or
 * reverts the plan. `--verify=off` execs the optimized program directly, as benchmarks want;
 * `--untouched` runs it untouched on purpose and records the run for `hetopt report`.
 */
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/launch.h"
#include "cli/run_decision.h"
#include "cli/run_loop.h"
#include "cli/run_targets.h"
#include "common/clock.h"
#include "common/elf_imports.h"
#include "common/log.h"
#include "common/options.h"
#include "common/paths.h"
#include "common/program_identity.h"
#include "contracts/plan.h"
#include "contracts/program_recipe.h"
#include "contracts/run_ledger.h"
#include "contracts/run_record.h"
#include "contracts/trace_marks.h"
#include "hetopt/version.h"

#ifdef HETOPT_HAVE_ANALYZER
#include "analyzer/closed_loop.h"
#include "analyzer/gain.h"
#include "analyzer/planner.h"
#include "analyzer/profile_store.h"
#include "store/db.h"
#endif

namespace hetopt::cli {
namespace {

struct PlanRequest {
  std::string policy;       ///< --policy
  std::string profileName;  ///< --profile
  bool force = false, noPool = false, dryRun = false, lateContext = false, noBuildAhead = false;
  bool verify = true;              ///< --verify / HETOPT_VERIFY: the closed loop
  bool statsAsked = false;         ///< --stats: only an optimized run shows them
  mutable bool described = false;  ///< the dry run printed the whole decision
};

/// The plan file of step `variant` of the chain whose first plan is `planFile`.
std::string variantPlanFile(const std::string& planFile, size_t variant) {
  if (variant == 0) return planFile;
  return runRecordPrefix(planFile) + "v" + std::to_string(variant) + ".plan";
}

#ifdef HETOPT_HAVE_ANALYZER
/// One program's plan and its smaller variants, as written.
struct TargetPlans {
  std::vector<std::string> forkMarks;  ///< whose presence decided `driver late`
  std::vector<std::string> files;      ///< the plan first
  std::vector<uint64_t> ids;           ///< planIdentity() of each
  std::vector<std::string> summaries;  ///< the line an optimized run of each prints
};

// One target's plan (and, with `chain`, its smaller variants): written (paths in *out), or printed
// with --dry-run. Empty, or why the target runs untouched.
std::string planTarget(Db& db, const Target& target, const ProgramIdentity& identity,
                       const std::vector<std::string>& command, const PlanRequest& request,
                       bool chain, TargetPlans* out) {
  const analyzer::AppProfile& profile = target.profile;
  // Priced with this machine's curves as they are now: a new characterization needs no re-trace.
  // Without curves (and without prices stored with the profile) nothing is pinned, but the
  // start-up may still pay: the planner says which.
  analyzer::PlanOptions options;
  std::unique_ptr<analyzer::GainModel> gain =
      analyzer::loadGainModel(db, profile.device, &options.noCurves);
  options.forcedPolicy = request.policy;
  options.forceRegistrations = request.policy == "register";
  options.force = request.force;
  options.directAllocation = request.noPool;
  options.earlyContext = !request.lateContext;
  // The plan's file, by the key the plan is written under (the command as it is now, for itself).
  const std::string plansDir = cacheDirectory() + "/plans";
  const std::string planKey = target.self ? identity.key() : profile.program.key();
  const std::string planFile = plansDir + "/" + planFileName(planKey);
  // The programs its trace saw it build from source, kept by `hetopt trace` beside its plans.
  if (!request.noBuildAhead) {
    const std::string recipe =
        programRecipePath(plansDir + "/" + planFileName(profile.program.key()));
    ProgramRecipe r;
    std::string unread;
    if (access(recipe.c_str(), F_OK) == 0) {
      if (readProgramRecipeFile(recipe, &r, &unread))
        options.recipePath = recipe, options.recipePrograms = r.programs.size();
      else
        warn("run: programs not built ahead: %s", unread.c_str());
    }
  }
  // A forked copy called OpenCL in an optimized run of any of the plans.
  for (size_t v = 0; v < 3; ++v) {
    out->forkMarks.push_back(forkMarkerPath(variantPlanFile(planFile, v)));
    options.forkedWhenOptimized |= access(out->forkMarks.back().c_str(), F_OK) == 0;
  }
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
  const std::string launched = target.self ? std::string()
                                           : "for " + profile.program.describe() + ", which " +
                                                 command[0] + " starts (pid " +
                                                 std::to_string(target.pid) + " when traced)";
  if (request.dryRun) {
    if (decision.verdict.empty()) decision.verdict = whyNot;
    if (!launched.empty()) printf("launched: this plan is %s\n", launched.c_str());
    fputs(analyzer::describeDecision(profile, plan, decision, planned).c_str(), stdout);
    request.described = true;
  }
  if (!planned) return whyNot;
  std::vector<analyzer::PlanVariant> variants{{plan, ""}};
  if (chain) variants = analyzer::planChain(plan, options, &decision);
  if (!request.dryRun && !makePrivateDirs(plansDir, &error)) return error;
  for (size_t v = 0; v < variants.size(); ++v) {
    const std::string file = variantPlanFile(planFile, v);
    if (!request.dryRun && !writePlanFile(file, variants[v].plan, &error)) return error;
    out->files.push_back(file);
    out->ids.push_back(planIdentity(variants[v].plan));
    std::string summary = analyzer::planSummary(variants[v].plan, decision, variants[v].savingNs);
    if (v)
      summary =
          "the smaller plan " + std::to_string(v) + " (" + variants[v].change + "): " + summary;
    out->summaries.push_back((launched.empty() ? "" : launched + ": ") + summary);
  }
  return {};
}
#endif

// What `hetopt run` does with `command`: the plans it wrote (with --dry-run: would write, and the
// decision printed to stdout), or why it runs untouched.
PreparedRun decide(const IdentifiedCommand& command, const std::vector<std::string>& argv,
                   const std::string& dbPath, const PlanRequest& request);

// Every option that changes what `hetopt run` decides, as one line.
std::string decisionOptions(const PlanRequest& r) {
  return "policy=" + r.policy + " profile=" + r.profileName + " force=" + std::to_string(r.force) +
         " no-pool=" + std::to_string(r.noPool) + " late-context=" + std::to_string(r.lateContext) +
         " build-ahead=" + std::to_string(!r.noBuildAhead);
}

PreparedRun preparePlan(const std::vector<std::string>& argv, const std::string& dbPath,
                        const PlanRequest& request) {
  PreparedRun out;
  IdentifiedCommand command;
  if (!identifyForRun(argv, request.profileName, &command, &out.whyNot)) return out;
  const std::string key = command.identity.key();
  // --dry-run prints the whole decision: it always decides.
  if (!request.dryRun && loadCachedDecision(key, decisionOptions(request), dbPath, &out))
    return out;
  out = decide(command, argv, dbPath, request);
  // A trace that finds no OpenCL call changes what a declined run says, not the DB.
  out.marks.push_back(noOpenClMarkPath(command.identity));
  if (!request.dryRun) storeCachedDecision(key, decisionOptions(request), dbPath, out);
  return out;
}

PreparedRun decide(const IdentifiedCommand& command, const std::vector<std::string>& argv,
                   const std::string& dbPath, const PlanRequest& request) {
  PreparedRun out;
#ifndef HETOPT_HAVE_ANALYZER
  (void)command, (void)argv, (void)dbPath, (void)request;
  out.whyNot = "this hetopt was built without the analyzer, so it has no profiles";
  return out;
#else
  const ProgramIdentity& identity = command.identity;
  std::string error;
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadOnly, &error);
  if (!db) {
    out.whyNot = whyNoProfile(command, error);
    return out;
  }
  std::vector<Target> targets;
  out.whyNot = findTargets(*db, command, &targets);
  if (!out.whyNot.empty()) return out;
  // Launched programs are planned only while they are as traced.
  for (const Target& t : targets) {
    if (t.self) continue;
    out.programs.push_back(t.profile.program.path);
    if (t.profile.program.script.kind == ScriptRef::Kind::File)
      out.programs.push_back(t.profile.program.script.name);
  }
  out.programKey = identity.key();
  out.commandPlan = cacheDirectory() + "/plans/" + planFileName(identity.key());
  out.ledger = ledgerPath(out.commandPlan);
  std::string reasons;
  std::vector<TargetPlans> planned;
  for (const Target& t : targets) {
    TargetPlans plans;
    // Smaller plans are tried for one program; a launcher's several keep their plans whole.
    std::string why = planTarget(*db, t, identity, argv, request, targets.size() == 1, &plans);
    if (!why.empty()) {
      reasons += (reasons.empty() ? "" : "; ") +
                 (t.self ? why : t.profile.program.describe() + ": " + why);
      continue;
    }
    out.marks.insert(out.marks.end(), plans.forkMarks.begin(), plans.forkMarks.end());
    planned.push_back(std::move(plans));
  }
  if (planned.empty()) {
    out.whyNot = reasons.empty() ? "nothing to optimize" : reasons;
    return out;
  }
  if (!reasons.empty() && !request.dryRun) warn("not optimizing %s", reasons.c_str());
  if (planned.size() == 1) {
    for (size_t v = 0; v < planned[0].files.size(); ++v)
      out.chain.push_back({planned[0].files[v], planned[0].ids[v], planned[0].summaries[v]});
    return out;
  }
  PreparedRun::Step step;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the plans' identities
  for (const TargetPlans& p : planned) {
    step.planFiles += (step.planFiles.empty() ? "" : ":") + p.files[0];
    step.summary += (step.summary.empty() ? "" : "; ") + p.summaries[0];
    for (int b = 0; b < 8; ++b) h = (h ^ ((p.ids[0] >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  step.id = h;
  out.chain.push_back(step);
  return out;
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
  IdentifiedCommand identified;
  if (!identifyForRun(command, {}, &identified, whyNot)) return {};
  // `hetopt report` compares runs with the program's current profile: without one, a record
  // would never be read.
  std::string error;
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadOnly, &error);
  if (!db) return *whyNot = whyNoProfile(identified, error), std::string();
  std::vector<Target> targets;
  *whyNot = findTargets(*db, identified, &targets);
  if (!whyNot->empty()) return {};
  const ProgramIdentity& identity = identified.identity;
  const std::string plansDir = cacheDirectory() + "/plans";
  if (!makePrivateDirs(plansDir, &error)) return *whyNot = error, std::string();
  *programKey = identity.key();
  return plansDir + "/" + planFileName(identity.key());
#endif
}

// `hetopt run --untouched`: the program exactly as natively (no shim, same arguments, standard
// streams, exit status or death signal), timed from hetopt's start until it is reaped, recorded
// beside its plan and in its ledger as a control run: it pairs with the optimized run next to it.
int runUntouched(const std::vector<std::string>& program, const std::string& dbPath) {
  Launch launch;
  launch.argv = program;
  launch.preloadShim = false;
  std::string programKey, whyNot;
  const std::string planPath = untouchedRecordPlace(program, dbPath, &programKey, &whyNot);
  dropShimFromEnvironment();
  if (planPath.empty()) {
    warn("%s; running the program untouched, and this run is not recorded", whyNot.c_str());
    return execProgram(launch);
  }
#ifdef HETOPT_HAVE_ANALYZER
  return runControl(launch, planPath, programKey);
#else
  return execProgram(launch);  // unreachable: without the analyzer there is no record place
#endif
}

}  // namespace

int cmdRun(int argc, char** argv) {
  const CommandSpec& spec = commandSpec("run");
  ParsedArgs args;
  if (int rc = parseOrExit(spec, argc, argv, &args); rc >= 0) return rc;
#ifdef HETOPT_HAVE_ANALYZER
  static_assert(analyzer::kVerdictMaxPairs == 10 && analyzer::kWatchEvery == 10,
                "the --verify help in command_specs.cpp says 10 pairs and one run in 10");
#endif
  const bool passthrough = args.flag("passthrough"), stats = args.flag("stats");
  PlanRequest request;
  request.policy = args.value("policy");
  request.profileName = args.value("profile");
  request.force = args.flag("force");
  request.noPool = args.flag("no-pool");
  request.dryRun = args.flag("dry-run");
  request.lateContext = args.flag("no-early-context");
  request.noBuildAhead = args.flag("no-build-ahead");
  const std::string device = args.value("device"), dbPath = args.value("db", defaultDbPath());
  std::string statsJson = args.value("stats");
  const std::string verify = args.value("verify", optionString(Option::VERIFY));
  if (verify != "on" && verify != "off")
    return usageError(spec, "HETOPT_VERIFY=" + verify + " is not on or off");
  request.verify = verify == "on";
  request.statsAsked = stats || !statsJson.empty();
  const std::vector<std::string>& program = args.operands;
  if (args.flag("untouched")) {
    const std::string others = args.givenExcept({"untouched", "db", "verify"});
    if (!others.empty())
      return usageError(spec,
                        "--untouched runs the program as natively: it takes no option but --db and "
                        "--verify (got " +
                            others + ")");
    return runUntouched(program, dbPath);
  }
  warnUnmatchedDevice("run", device);
  Launch launch;
  launch.argv = program;
  if (!device.empty()) launch.env.push_back({"HETOPT_DEVICE", device});
  if (passthrough) {
    launch.env.push_back({"HETOPT_MODE", "off"});
    return execProgram(launch);
  }
  const PreparedRun prepared = preparePlan(program, dbPath, request);
  if (request.dryRun) {
    if (!prepared.whyNot.empty() && !request.described)
      printf("decline: %s\n", prepared.whyNot.c_str());
#ifdef HETOPT_HAVE_ANALYZER
    if (prepared.whyNot.empty())
      printf("%s\n", loopStanding(prepared, request.verify, request.statsAsked).c_str());
#endif
    return 0;
  }
  if (!prepared.whyNot.empty()) {
    warn("%s; running unoptimized", prepared.whyNot.c_str());
#ifdef HETOPT_HAVE_ANALYZER
    if (request.verify && !prepared.ledger.empty()) ledgerDeclined(prepared.ledger);
#endif
    launch.preloadShim = false;
    return execProgram(launch);
  }
  if (stats) launch.env.push_back({"HETOPT_STATS", "1"});
  if (!statsJson.empty()) {
    // The program may change its directory before it exits.
    if (statsJson[0] != '/') {
      char cwd[4096];
      if (getcwd(cwd, sizeof cwd)) statsJson = std::string(cwd) + "/" + statsJson;
    }
    launch.env.push_back({"HETOPT_STATS_JSON", statsJson});
  }
#ifdef HETOPT_HAVE_ANALYZER
  if (request.verify) return runVerified(launch, prepared, request.statsAsked);
#endif
  warn("%s", prepared.chain[0].summary.c_str());
  launch.env.push_back({"HETOPT_MODE", "optimize"});
  launch.env.push_back({"HETOPT_PLAN_FILE", prepared.chain[0].planFiles});
  launch.env.push_back({"HETOPT_VERIFY", "off"});  // the shim keeps no run record either
  // The program runs in this process (exec): the wall time its stats give counts from hetopt's
  // start, as a timed run's does.
  launch.env.push_back(
      {"HETOPT_RUN_STARTED", std::to_string(getpid()) + ":" + std::to_string(hetoptStartedNs())});
  return execProgram(launch);
}

}  // namespace hetopt::cli
