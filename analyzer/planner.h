// SPDX-License-Identifier: MIT
/**
 * @file From an application profile (analyzer) to the shim's optimization plan (contracts/plan.h):
 * which sites, pinned how (a pool of which policy and size, or registration in place), and which
 * untracked memory (static data, anonymous mappings) to register in place. The decision
 * "optimize or not" is made here, from the measured transfer times the profile keeps and the
 * machine's current curves (so a re-characterization needs no re-trace), with one line saying
 * which number decided; `hetopt run --dry-run` prints the whole decision.
 */
#pragma once
#include <string>
#include <vector>

#include "analyzer/gain.h"
#include "analyzer/profile.h"
#include "contracts/plan.h"

namespace hetopt::analyzer {

/// Below these a site, and a whole plan, is not worth the shim: pinning saves microseconds that
/// run-to-run noise and the shim's own work (a call-site capture per tracked allocation, a
/// background thread) would eat. A site must save both; so must the plan, after that overhead.
inline constexpr double kMinSiteSavingNs = 0.5e6;
inline constexpr double kMinSiteShare = 0.001;  ///< of the traced run
inline constexpr double kMinPlanSavingNs = 5e6;
/// Of the traced run. Measured on an H100 (PolyBench STANDARD, 7 interleaved rounds): plans
/// predicting 1.7-2.1% ran at 0.94-1.00x of native, those predicting 6-27% at 1.04-1.30x; what
/// `hetopt run` itself costs (the exec, the early context, the shim) lies between.
inline constexpr double kMinPlanShare = 0.04;
/// What optimize mode adds per tracked allocation (unwinding to find its site).
inline constexpr double kSiteCaptureNs = 2000;

struct PlanOptions {
  std::string
      forcedPolicy;  ///< non-empty: every candidate site, this pool policy (experiments, CI)
  /// Every static range and anonymous mapping that can be registered in place is planned,
  /// whatever the register curves say (`--policy register`: experiments, CI on PoCL).
  bool forceRegistrations = false;
  /// `--force`: every site that saves anything at all, however little, and whatever the run's
  /// total.
  bool force = false;
  bool directAllocation = false;  ///< --no-pool: every candidate allocated by the policy directly
  /// The program's one context made early by the shim, when the profile says it made exactly one
  /// (`hetopt run --late-context` turns it off).
  bool earlyContext = true;
  /// In an optimized run a forked copy called OpenCL (forkMarkerPath beside its plan): `driver
  /// late`, as for a program that forked when traced.
  bool forkedWhenOptimized = false;
  /// A module of the program that imports fork (common/elf_imports.h: the executable or a library
  /// it needs; empty when none does): `driver late`, as the shim would decide at start-up anyway.
  std::string forkImporter;
  double poolSlack = 1.25;  ///< pool = slack * sum of the pooled sites' peak live bytes (+ 1 MiB)
  /// The program's recipe (contracts/program_recipe.h) and how many programs it holds: with the
  /// early context the plan builds them ahead (`hetopt run --no-build-ahead`: empty).
  std::string recipePath;
  uint64_t recipePrograms = 0;
  /// Why `gain` is null (no curves for the device here): the words of a decline when no site has a
  /// stored price either. Unpriced sites pin nothing, but the start-up needs no curves.
  std::string noCurves;
};

/// What was decided for one candidate site or piece of untracked memory, and why.
struct SiteDecision {
  std::string what;      ///< where: "main at gemm.c:312 (malloc)", "g_weights (static data)"
  std::string memory;    ///< "1 x 64.0 MiB, h2d 1 x 64.0 MiB (measured 40.1 ms)"
  std::string strategy;  ///< "register in place", "hybrid pool", "untouched"
  std::string when;      ///< when the pinning happens, for planned ones
  std::string why;       ///< the numbers that decided
  double savingNs = 0;   ///< predicted
  bool planned = false;
  /// What it is in the plan, for planChain: a site's key, or a static range's module and offset.
  uint64_t siteKey = 0, moduleKey = 0, moduleOffset = 0;
  bool staticRange = false;
};

struct PlanDecision {
  std::vector<SiteDecision>
      sites;                ///< candidate sites (most valuable first), then untracked memory
  double savingNs = 0;      ///< predicted saving of what is planned (pinning)
  double startupNs = 0;     ///< predicted start-up saved beside it (startupSavingNs)
  double buildAheadNs = 0;  ///< of which the programs built ahead (buildAheadSavingNs)
  double overheadNs = 0;    ///< the shim's own predicted cost
  double runNs = 0;         ///< the traced run's wall time
  std::string gainSource;   ///< which curves, or the profile's stored predictions
  std::string verdict;      ///< one line: optimized and how, or why not
  /// Which driver start the plan uses and why: "early: ..." or "late: <why>; ..." (`driver late`).
  std::string driver;
  /// What the plan is predicted to save, net of the shim's own cost (never below 0).
  double netSavingNs() const {
    return savingNs + startupNs - overheadNs > 0 ? savingNs + startupNs - overheadNs : 0;
  }
};

/// What an optimized run saves of the program's start-up, from the profile's start-up times: the
/// shim enumerates the platforms at once (every optimized run), and with `earlyContext` makes the
/// context right after, while the program still prepares its input; its own calls then find them
/// done. Natively the context is ready at X + C (X: its first clCreateContext, C: what that took);
/// optimized at max(max(F, E) + W, E + C), with F its first OpenCL call, E what the drivers took
/// to load and W = X - F - E the work in between. 0 when the profile has no start-up times.
double startupSavingNs(const AppProfile& profile, bool earlyContext);

/// What building the program's kernels ahead on the early context saves: the builder starts when
/// that context is ready (E + C) and the program asks for its first build at B, sooner than traced
/// by what the early context overlaps; it saves what of the traced builds fits in between. 0
/// without start-up or build times.
double buildAheadSavingNs(const AppProfile& profile);

/// How long a registered site's first block can be pinned on hetopt's thread before the program's
/// first transfer from it needs it: the program's OpenCL time between the later of its context
/// and the block and that transfer (the profile's leadNs); with the early context, a block the
/// program made before any OpenCL call is pinned from the moment that context is ready (E + C),
/// while the program still prepares its input. An estimate in program order: the trace keeps no
/// timestamps between calls, and the program's own computing in between only adds slack. The
/// planner uses it only for blocks at least half of which crosses in one transfer (a block mostly
/// never sent stays priced in full: registering it locks all of it).
double registrationSlackNs(const AppProfile& profile, const CandidateSite& site, bool earlyContext);

/// The one line `hetopt run` prints when it optimizes: what is pinned how, about how much memory,
/// the predicted saving (`predictedNs`; below 0: the decision's, netSavingNs), and where to see
/// what was done.
std::string planSummary(const Plan& plan, const PlanDecision& decision, double predictedNs = -1);

/// Builds the plan for `profile`. With a `gain` model (this machine's characterization of the
/// profile's device) every site is priced anew; without, the predictions stored with the profile
/// are used. When no site or registration pays but the early context (and what it builds ahead)
/// saves a plan's minimum of the start-up alone, the plan is start-up only (Plan::startupOnly).
/// False with *whyNot (one line, the deciding numbers, pinning's and the start-up's) when the
/// program should run untouched. `decision` (optional) receives every site's line either way.
bool buildPlan(const AppProfile& profile, const PlanOptions& options, const GainModel* gain,
               Plan* plan, std::string* whyNot, PlanDecision* decision = nullptr);

/// The plan and the smaller plans the closed loop tries when it loses (analyzer/closed_loop.h),
/// in order: the plan itself; without its early start (`driver late`, no early context), when it
/// has one and pins something (a start-up-only plan without it would do nothing); then also
/// without the site or static range that pins the most memory, when it has more than one. Each
/// differs from the one before. With the plan's `decision`, each smaller plan is priced for what
/// it keeps (its Plan::predictedSavingNs and `savingNs`): no start-up overlap without the early
/// start, and not the saving of the piece it leaves out.
struct PlanVariant {
  Plan plan;
  std::string change;    ///< what it leaves out, for people ("" for the plan itself)
  double savingNs = -1;  ///< predicted, net of the shim's cost; below 0: not priced (no decision)
};
std::vector<PlanVariant> planChain(const Plan& plan, const PlanOptions& options,
                                   const PlanDecision* decision = nullptr);

/// The decision as `hetopt run --dry-run` prints it.
std::string describeDecision(const AppProfile& profile, const Plan& plan,
                             const PlanDecision& decision, bool planned);

/// A policy the pool can be backed by for a decision's policy: register (in place, no pool) maps to
/// hybrid, the pooled policy with the same transfer speed; standard means no pool at all ("").
std::string poolPolicyFor(const std::string& decisionPolicy);

}  // namespace hetopt::analyzer
