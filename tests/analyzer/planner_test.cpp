// SPDX-License-Identifier: MIT
/** @file Profile -> plan decisions of `hetopt run`. */
#include "analyzer/planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/units.h"

using namespace hetopt;
using namespace hetopt::analyzer;

namespace {

// A site whose stored prediction is `policy` (register: in place; standard: nothing; else a pool
// of it), saving 5 ms (of a 100 ms run: a plan must save 5 ms).
analyzer::CandidateSite site(uint64_t key, const char* policy, uint64_t peakLive,
                             bool known = true) {
  analyzer::CandidateSite s;
  s.siteKey = key;
  s.gain.known = known;
  s.gain.policy = policy;
  s.gain.allocMode = !strcmp(policy, "register")   ? "direct"
                     : !strcmp(policy, "standard") ? "plain"
                                                   : "pool";
  s.peakLiveBytes = peakLive;
  s.h2d.transfers = 1;
  s.h2d.bytes = 4 << 20;
  s.gain.standardNs = 6e6;
  s.gain.optimizedNs = 1e6;  // saves 5 ms
  return s;
}

analyzer::AppProfile eligibleProfile() {
  analyzer::AppProfile p;
  p.program.path = "/opt/app";
  p.program.buildId = "abcd";
  p.device = "NVIDIA CUDA / NVIDIA H100";
  p.eligibility.eligible = true;
  p.eligibility.reason = "ratio 2.5 >= 0.1";
  p.breakdown.totalNs = 100e6;  // a 100 ms run: a site must save 0.5 ms, a plan 5 ms
  return p;
}

bool plan(const analyzer::AppProfile& p, const PlanOptions& o, Plan* out, std::string* why,
          const analyzer::GainModel* gain = nullptr, PlanDecision* d = nullptr) {
  return buildPlan(p, o, gain, out, why, d);
}

// Curves as simple lines: pageable 8 GB/s (0.125 ns/B), pinned 50 GB/s (0.02 ns/B); registering a
// block in place 0.08 ns/B, a pool's share 0.45 ns/B (the H100's measured shape).
class LineGain : public analyzer::GainModel {
 public:
  void predict(const analyzer::CandidateSite& s, analyzer::GainPrediction* out) const override {
    *out = {};
    const double bytes = static_cast<double>(s.h2d.bytes + s.d2h.bytes);
    const double measured = s.h2d.deviceNs + s.d2h.deviceNs;
    out->known = true;
    out->measured = measured > 0;
    out->standardNs = out->measured ? measured : 0.125 * bytes;
    const double reg =
        0.08 * static_cast<double>(s.typicalAllocBytes) * static_cast<double>(s.allocations);
    const double pool = 0.45 * static_cast<double>(s.peakLiveBytes);
    const bool registers = reg <= pool;
    out->policy = registers ? "register" : "hybrid";
    out->allocMode = registers ? "direct" : "pool";
    out->costNs = registers ? reg : pool;
    out->optimizedNs = 0.02 * bytes + out->costNs;
  }
  bool registerCost(uint64_t* latency, uint64_t* perMiB) const override {
    *latency = 20000;
    *perMiB = static_cast<uint64_t>(0.08 * (1 << 20));
    return true;
  }
  std::string describe() const override { return "test curves"; }
};

analyzer::CandidateSite traced(uint64_t key, uint64_t allocations, uint64_t blockBytes,
                               uint64_t transfers, double measuredNs) {
  analyzer::CandidateSite s;
  s.siteKey = key;
  s.allocator = "malloc";
  s.allocations = allocations;
  s.minAllocBytes = s.maxAllocBytes = s.typicalAllocBytes = blockBytes;
  s.peakLiveBytes = blockBytes;
  s.peakLiveBlocks = 1;
  s.d2h.transfers = transfers;
  s.d2h.bytes = transfers * blockBytes;
  s.d2h.typicalBytes = s.d2h.maxBytes = blockBytes;
  s.d2h.deviceNs = measuredNs;
  return s;
}

}  // namespace

TEST(RunPlan, SitesThatGainBecomeThePlanEachWithItsStrategy) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x11, "register", 64 << 20), site(0x22, "hybrid", 4 << 20),
                  site(0x33, "standard", 1 << 20)};
  Plan plan;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why)) << why;
  ASSERT_EQ(plan.sites.size(), 2u);  // the standard site stays with malloc
  EXPECT_EQ(plan.poolPolicy, "hybrid");
  EXPECT_EQ(plan.programKey, p.program.key());
  EXPECT_EQ(plan.device, p.device);
  // Only the pooled site is in the pool; the register one stays where malloc puts it.
  EXPECT_GE(plan.poolBytes, uint64_t{5} << 20);
  EXPECT_LT(plan.poolBytes, uint64_t{64} << 20);
  EXPECT_EQ(plan.poolBytes % (1 << 20), 0u);
  EXPECT_FALSE(plan.hasProgramStamp);  // `hetopt run` adds the file's stamp
  plan.hasProgramStamp = true;
  plan.programStamp = {2049, 1234567, 883416, 1763900000123456789, -5};
  std::string text = plan.serialize();
  Plan back;
  ASSERT_TRUE(parsePlan(text, &back, &why)) << why;
  EXPECT_TRUE(back.hasProgramStamp);
  EXPECT_TRUE(back.programStamp == plan.programStamp);
  ASSERT_NE(back.find(0x11, 12345), nullptr);
  EXPECT_EQ(back.find(0x11, 12345)->strategy, SiteStrategy::Register);
  // 5 ms saved over 4 MiB moved: a transfer may wait 1.25 ms per MiB for its pinning.
  EXPECT_EQ(back.find(0x11, 12345)->waitNsPerMiB, 1250000u);
  EXPECT_EQ(back.find(0x22, 12345)->strategy, SiteStrategy::Pool);
  EXPECT_EQ(back.find(0x33, 12345), nullptr);
}

TEST(RunPlan, TheMeasuredTimeDecidesAndTheCurrentCurvesPriceIt) {
  // One 256 MiB block read back once, which the trace measured at 221 ms (first touch of
  // never-written memory); the warm curve would say 34 ms.
  analyzer::AppProfile p = eligibleProfile();
  p.breakdown.totalNs = 1.4e9;
  p.candidates = {traced(0x51, 1, 256 << 20, 1, 221e6)};
  p.candidates[0].gain.note = "stored: nothing known";  // stale stored prediction
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  ASSERT_EQ(plan.sites.size(), 1u);
  EXPECT_EQ(plan.sites[0].strategy, SiteStrategy::Register);  // once-allocated: no pool
  EXPECT_EQ(plan.poolPolicy, "none");
  EXPECT_EQ(plan.poolBytes, 0u);
  EXPECT_EQ(plan.registerLatencyNs, 20000u);  // the curves' register cost travels in the plan
  // 221 ms - 5.4 ms pinned - 21.5 ms registration ~ 194 ms
  EXPECT_NEAR(d.savingNs, 194e6, 1e6);
  ASSERT_EQ(d.sites.size(), 1u);
  EXPECT_EQ(d.sites[0].strategy, "register in place");
  EXPECT_NE(d.sites[0].why.find("traced 221"), std::string::npos) << d.sites[0].why;
  EXPECT_NE(d.verdict.find("1 registered in place"), std::string::npos) << d.verdict;
  std::string text = describeDecision(p, plan, d, true);
  EXPECT_NE(text.find("strategy: register in place"), std::string::npos) << text;
  EXPECT_NE(text.find("test curves"), std::string::npos) << text;

  // The same site allocated 50 times, each block sent once: registering every block costs more
  // than a pool pinned once.
  p.candidates = {traced(0x52, 50, 16 << 20, 50, 50 * 14e6)};
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_EQ(plan.sites[0].strategy, SiteStrategy::Pool);
  EXPECT_EQ(plan.poolPolicy, "hybrid");
  EXPECT_GE(plan.poolBytes, uint64_t{20} << 20);
}

TEST(RunPlan, TooLittleToGainRunsUntouchedSayingWhichNumberDecided) {
  analyzer::AppProfile p = eligibleProfile();
  p.breakdown.totalNs = 2e9;  // 2 s: a site must save 2 ms, the plan 80 ms
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  // 64 MiB sent once, warm: 8.4 ms pageable, 1.3 pinned, 5.4 registering: saves 1.7 ms.
  p.candidates = {traced(0x61, 1, 64 << 20, 1, 8.4e6)};
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("the best site 1.69 ms, where a site must save 2.00 ms"), std::string::npos)
      << why;
  EXPECT_NE(d.sites[0].why.find("saves only 1.69 ms"), std::string::npos) << d.sites[0].why;
  // Sites that each save enough, but not the plan once hetopt's own work is counted.
  p.candidates = {traced(0x62, 1, 64 << 20, 1, 12e6)};  // saves 5.3 ms
  p.trackedAllocations = 1000;                          // ~2 ms of call-site capture
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("would save ~3.29 ms"), std::string::npos) << why;
  EXPECT_NE(why.find("must save 80.00 ms"), std::string::npos) << why;
  PlanOptions force;
  force.force = true;
  EXPECT_TRUE(::plan(p, force, &plan, &why, &curves, &d)) << why;
  // The dispatch ratio is reported, not decisive.
  p.eligibility.eligible = false;
  p.candidates = {traced(0x63, 1, 256 << 20, 1, 221e6)};
  EXPECT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  // Without curves and without stored predictions: nothing known, nothing planned.
  p.candidates = {site(0x11, "standard", 1 << 20), site(0x22, "hybrid", 1 << 20, false)};
  EXPECT_FALSE(::plan(p, {}, &plan, &why));
  EXPECT_NE(why.find("does not pay"), std::string::npos) << why;
}

TEST(RunPlan, TheStartUpAnOptimizedRunOverlapsCountsOncePinningPays) {
  analyzer::AppProfile p = eligibleProfile();
  p.breakdown.totalNs = 2.4e9;                          // a plan must save 24 ms
  p.candidates = {traced(0x71, 1, 64 << 20, 1, 14e6)};  // pinning saves ~7 ms
  p.contextsCreated = 1;
  p.firstContextDevices = 1;
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d)) << why;  // no start-up times known
  // 600 ms of input before the first OpenCL call, drivers loaded in 365 ms, the context made at
  // 970 ms in 276 ms: natively ready at 1246 ms; optimized, the shim has it at 641 ms and the
  // program asks at 605 ms.
  p.startup = {600'000'000, 970'000'000, 365'000'000, 276'000'000};
  EXPECT_NEAR(startupSavingNs(p, true), 605e6, 1e3);
  EXPECT_NEAR(startupSavingNs(p, false), 365e6, 1e3);  // enumeration alone, in every optimized run
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_TRUE(plan.earlyContext);
  EXPECT_NEAR(d.startupNs, 605e6, 1e3);
  EXPECT_NE(d.verdict.find("start-up overlapped ~605.00 ms"), std::string::npos) << d.verdict;
  EXPECT_NE(
      describeDecision(p, plan, d, true).find("start-up: traced first OpenCL call at 600.00 ms"),
      std::string::npos);
  // Two contexts: none made early; the enumeration still overlaps.
  p.contextsCreated = 2;
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_FALSE(plan.earlyContext);
  EXPECT_NEAR(d.startupNs, 365e6, 1e3);
  // Nothing worth pinning, and two contexts: nothing made early, no start-up-only plan either.
  p.candidates = {traced(0x72, 1, 1 << 20, 1, 0.2e6)};
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("no start-up overlap either: the traced run made 2 contexts"),
            std::string::npos)
      << why;
}

// One context on one device, start-up times known: a plan would start the driver early and
// make the context then, unless the program forks.
analyzer::AppProfile oneContextProfile() {
  analyzer::AppProfile p = eligibleProfile();
  p.breakdown.totalNs = 2.4e9;
  p.candidates = {traced(0x71, 1, 64 << 20, 1, 14e6)};
  p.contextsCreated = 1;
  p.firstContextDevices = 1;
  p.startup = {600'000'000, 970'000'000, 365'000'000, 276'000'000};
  return p;
}

/// A forced plan for `p` (curves as lines) and what --dry-run says of it.
struct ForcedPlan {
  Plan plan;
  PlanDecision decision;
  std::string dryRun;
};
ForcedPlan forcedPlan(const analyzer::AppProfile& p, PlanOptions options = {}) {
  options.force = true;
  LineGain curves;
  ForcedPlan f;
  std::string why;
  EXPECT_TRUE(::plan(p, options, &f.plan, &why, &curves, &f.decision)) << why;
  f.dryRun = describeDecision(p, f.plan, f.decision, true);
  return f;
}

// A program that forked copies of itself when traced: the driver stays untouched until its own
// first OpenCL call (forked children hang on a driver their parent initialized), so no early
// context and no start-up overlap; the plan line round-trips.
TEST(RunPlan, AProgramThatForksGetsTheDriverLate) {
  analyzer::AppProfile p = oneContextProfile();
  p.forkedChildren = 3;
  ForcedPlan f = forcedPlan(p);
  EXPECT_TRUE(f.plan.driverLate);
  EXPECT_FALSE(f.plan.earlyContext);
  EXPECT_EQ(f.decision.startupNs, 0);
  EXPECT_NE(f.dryRun.find("driver:  late: forked when traced (3 forked copies"), std::string::npos);
  Plan back;
  std::string why;
  ASSERT_TRUE(parsePlan(f.plan.serialize(), &back, &why)) << why;
  EXPECT_TRUE(back.driverLate);
  p.forkedChildren = 0;
  f = forcedPlan(p);
  EXPECT_FALSE(f.plan.driverLate);
  EXPECT_TRUE(f.plan.earlyContext);
  // Not when traced, but an optimized run of it forked (the mark beside its plan).
  PlanOptions marked;
  marked.forkedWhenOptimized = true;
  f = forcedPlan(p, marked);
  EXPECT_TRUE(f.plan.driverLate);
  EXPECT_FALSE(f.plan.earlyContext);
  EXPECT_NE(f.dryRun.find("driver:  late: forked in an optimized run"), std::string::npos);
}

// Neither forked when traced nor optimized, but the executable or a library it needs imports fork
// (the shim would find it at start-up too): late, and the dry run names the module; a program that
// cannot fork gets the early driver, and the dry run says so.
TEST(RunPlan, AProgramThatCanForkGetsTheDriverLate) {
  analyzer::AppProfile p = oneContextProfile();
  ForcedPlan f = forcedPlan(p);
  EXPECT_FALSE(f.plan.driverLate);
  EXPECT_GT(f.decision.startupNs, 0);
  EXPECT_NE(f.dryRun.find("driver:  early: "), std::string::npos);
  PlanOptions canFork;
  canFork.forkImporter = "/usr/bin/python3.11";
  f = forcedPlan(p, canFork);
  EXPECT_TRUE(f.plan.driverLate);
  EXPECT_FALSE(f.plan.earlyContext);
  EXPECT_EQ(f.decision.startupNs, 0);
  EXPECT_NE(f.dryRun.find("driver:  late: the program can fork (/usr/bin/python3.11 imports fork)"),
            std::string::npos);
  // Every reason there is, in one line.
  p.forkedChildren = 2;
  f = forcedPlan(p, canFork);
  EXPECT_NE(
      f.dryRun.find("driver:  late: forked when traced (2 forked copies of it called OpenCL); "
                    "the program can fork ("),
      std::string::npos);
}

// The smaller plans the closed loop falls back to are priced for what they keep: without the early
// start no start-up overlap, and without a site not its saving. (Each used to carry the whole
// plan's prediction: `hetopt run` and the report's rows said the start-up overlap of a plan that
// no longer made the context early.)
TEST(RunPlan, EachSmallerPlanIsPricedForWhatItKeeps) {
  analyzer::AppProfile p = oneContextProfile();
  p.candidates = {traced(0x71, 1, 64 << 20, 1, 14e6), traced(0x72, 1, 1 << 20, 4, 4e6)};
  ForcedPlan f = forcedPlan(p);
  ASSERT_TRUE(f.plan.earlyContext);
  ASSERT_GT(f.decision.startupNs, 0);
  ASSERT_EQ(f.plan.sites.size(), 2u);
  f.plan.predictedSavingNs = static_cast<uint64_t>(f.decision.netSavingNs());
  double bigSiteNs = -1;
  for (const SiteDecision& d : f.decision.sites)
    if (d.planned && d.siteKey == 0x71) bigSiteNs = d.savingNs;
  ASSERT_GT(bigSiteNs, 0);
  const std::vector<PlanVariant> chain = planChain(f.plan, {}, &f.decision);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_DOUBLE_EQ(chain[0].savingNs, f.decision.netSavingNs());
  EXPECT_EQ(chain[0].plan.predictedSavingNs, f.plan.predictedSavingNs);
  const double late = f.decision.savingNs - f.decision.overheadNs;
  EXPECT_DOUBLE_EQ(chain[1].savingNs, late) << "no start-up overlap without the early start";
  EXPECT_EQ(chain[1].plan.predictedSavingNs, static_cast<uint64_t>(late));
  EXPECT_DOUBLE_EQ(chain[2].savingNs, std::max(0.0, late - bigSiteNs))
      << "nor the saving of the site it leaves out";
  EXPECT_EQ(chain[2].plan.sites.size(), 1u);
  EXPECT_EQ(chain[2].plan.sites[0].key, 0x72u);
  // The line `hetopt run` prints for each says its own prediction.
  EXPECT_NE(planSummary(chain[1].plan, f.decision, chain[1].savingNs)
                .find("predicted saving ~" + formatDuration(late) + " "),
            std::string::npos)
      << planSummary(chain[1].plan, f.decision, chain[1].savingNs);
  EXPECT_NE(planChain(f.plan, {})[1].plan.predictedSavingNs, chain[1].plan.predictedSavingNs)
      << "without the decision the smaller plans keep the plan's prediction";
}

// ---- plans whose only gain is the start-up
// -------------------------------------------------------

// One context, start-up times as on NVIDIA (605 ms overlapped), and a site whose pinning costs
// more than it saves (64 MiB sent once in 1 ms), even forced.
analyzer::AppProfile startupProfile() {
  analyzer::AppProfile p = oneContextProfile();
  p.candidates = {traced(0x72, 1, 64 << 20, 1, 1e6)};
  p.trackedAllocations = 1000;  // ~2 ms of call-site capture, were a site planned
  return p;
}

TEST(RunPlan, TheStartUpAlonePaysForAPlanThatPinsNothing) {
  analyzer::AppProfile p = startupProfile();
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_TRUE(plan.startupOnly());
  EXPECT_TRUE(plan.earlyContext);
  EXPECT_EQ(plan.poolPolicy, "none");
  EXPECT_EQ(plan.poolBytes, 0u);
  EXPECT_EQ(d.overheadNs, 0);  // no site: no call site is captured
  EXPECT_NEAR(d.startupNs, 605e6, 1e3);
  EXPECT_EQ(d.verdict,
            "optimize: start-up only (no site pays): the context made early; predicted saving "
            "~605.00 ms (25.2% of the traced 2.40 s run)");
  EXPECT_EQ(d.sites.size(), 1u);
  EXPECT_FALSE(d.sites[0].planned);
  // Its kernels built ahead too: the first build asked at 1.4 s, 80 ms of builds.
  p.startup.buildNs = 80'000'000;
  p.startup.firstBuildNs = 1'400'000'000;
  PlanOptions recipe;
  recipe.recipePath = "/home/u/.cache/hetopt/plans/app.programs";
  recipe.recipePrograms = 2;
  ASSERT_TRUE(::plan(p, recipe, &plan, &why, &curves, &d)) << why;
  EXPECT_EQ(plan.buildAheadPrograms, 2u);
  EXPECT_NE(d.verdict.find("optimize: start-up only (no site pays): the context made early, 2 "
                           "programs built ahead; predicted saving ~685.00 ms"),
            std::string::npos)
      << d.verdict;
  const std::string dry = describeDecision(p, plan, d, true);
  EXPECT_NE(dry.find("\nplan:    optimize: start-up only (no site pays)"), std::string::npos)
      << dry;
  EXPECT_NE(dry.find("context: made by hetopt at start-up"), std::string::npos) << dry;
  EXPECT_EQ(dry.find("pinning starts"), std::string::npos) << dry;
  EXPECT_NE(planSummary(plan, d).find("optimizing: start-up only (nothing pinned), the context "
                                      "made early and 2 programs built ahead"),
            std::string::npos)
      << planSummary(plan, d);
  // Written, it reads back as itself; the closed loop has no smaller plan to fall back to.
  Plan back;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &why)) << why;
  EXPECT_TRUE(back.startupOnly());
  EXPECT_EQ(back.buildAheadPrograms, 2u);
  ASSERT_EQ(planChain(plan, recipe).size(), 1u);
  // No candidate site at all, or none priced (no curves here, none stored): the same.
  p.candidates.clear();
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_NE(d.verdict.find("start-up only (no site feeds transfers)"), std::string::npos)
      << d.verdict;
  p.candidates = {site(0x11, "hybrid", 1 << 20, false)};
  PlanOptions noCurves;
  noCurves.noCurves = "no characterization for NVIDIA H100 in db; run `hetopt characterize`";
  ASSERT_TRUE(::plan(p, noCurves, &plan, &why, nullptr, &d)) << why;
  EXPECT_NE(d.verdict.find("start-up only (no site priced)"), std::string::npos) << d.verdict;
  EXPECT_NE(d.gainSource.find("none (no characterization for NVIDIA H100"), std::string::npos)
      << d.gainSource;
}

TEST(RunPlan, AStartUpOverlapTooSmallForAPlanIsDeclinedWithItsNumbers) {
  // PoCL's shape: drivers loaded in 4 ms, the context made at 12 ms in 3 ms: ~7 ms overlapped
  // of a 400 ms run, where a plan must save 16 ms.
  analyzer::AppProfile p = startupProfile();
  p.breakdown.totalNs = 400e6;
  p.startup = {5'000'000, 12'000'000, 4'000'000, 3'000'000};
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("pinning "), std::string::npos) << why;
  EXPECT_NE(why.find("; the start-up overlap alone (the context made early) would save ~7.00 ms "
                     "(1.8% of the traced 400.00 ms run), where a plan must save 16.00 ms "
                     "(`--force` optimizes anyway)"),
            std::string::npos)
      << why;
  EXPECT_EQ(d.verdict, why);
  EXPECT_NE(describeDecision(p, plan, d, false).find("\ndecline: "), std::string::npos);
  PlanOptions force;
  force.force = true;
  ASSERT_TRUE(::plan(p, force, &plan, &why, &curves, &d)) << why;
  EXPECT_TRUE(plan.startupOnly());
  // Without a candidate site the words say so first.
  p.candidates.clear();
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d));
  EXPECT_EQ(why.rfind("no allocation site feeds host<->device transfers; the start-up overlap", 0),
            0u)
      << why;
  // No start-up times in the profile (an older trace): not known, said so.
  p.startup = {};
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("the start-up overlap is not known"), std::string::npos) << why;
  // Nothing can be made early: no plan, even forced, and the words say why.
  p = startupProfile();
  p.contextsCreated = 2;
  EXPECT_FALSE(::plan(p, force, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("no start-up overlap either: the traced run made 2 contexts, not one"),
            std::string::npos)
      << why;
  p.contextsCreated = 1;
  PlanOptions late = force;
  late.earlyContext = false;
  EXPECT_FALSE(::plan(p, late, &plan, &why, &curves, &d));
  EXPECT_NE(why.find("no start-up overlap either: --no-early-context"), std::string::npos) << why;
  PlanOptions noPool = force;
  noPool.directAllocation = true;
  EXPECT_FALSE(::plan(p, noPool, &plan, &why, &curves, &d));
}

// A forked copy cannot use a driver its parent started: no early context, so nothing to gain.
TEST(RunPlan, AProgramThatForksGetsNoStartUpOnlyPlan) {
  analyzer::AppProfile p = startupProfile();
  p.forkedChildren = 1;
  PlanOptions force;
  force.force = true;
  LineGain curves;
  Plan plan;
  std::string why;
  EXPECT_FALSE(::plan(p, force, &plan, &why, &curves));
  EXPECT_NE(why.find("no start-up overlap either: the program forks or can fork"),
            std::string::npos)
      << why;
  p.forkedChildren = 0;
  force.forkImporter = "/usr/lib/libpython3.11.so";
  EXPECT_FALSE(::plan(p, force, &plan, &why, &curves));
  force.forkImporter.clear();
  force.forkedWhenOptimized = true;
  EXPECT_FALSE(::plan(p, force, &plan, &why, &curves));
}

TEST(RunPlan, RegistrationBeforeTheFirstTransferNeedsItIsOffTheCriticalPath) {
  // PolyBench's shape: a 1 GiB array allocated and filled before any OpenCL call, sent once.
  // Registering it (86 ms) on the program's path costs more than it saves (100 ms - 21.5 ms).
  analyzer::AppProfile p = eligibleProfile();
  p.breakdown.totalNs = 2.2e9;
  p.contextsCreated = 1;
  p.firstContextDevices = 1;
  p.candidates = {traced(0x81, 1, 1 << 30, 1, 100e6)};
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_NE(why.find("does not pay"), std::string::npos) << why;
  // The first call at 514 ms, drivers loaded in 124 ms, the context at 638 ms in 112 ms: the early
  // context is ready at 236 ms and the program's first transfer comes at ~514 ms, so hetopt's
  // thread registers the array while the program still fills it.
  p.startup = {514'000'000, 638'000'000, 124'000'000, 112'000'000};
  p.candidates[0].allocatedBeforeOpenCL = true;
  EXPECT_NEAR(registrationSlackNs(p, p.candidates[0], true), 278e6, 1e3);
  EXPECT_NEAR(registrationSlackNs(p, p.candidates[0], false), 0, 1e3);
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  ASSERT_EQ(plan.sites.size(), 1u);
  EXPECT_EQ(plan.sites[0].strategy, SiteStrategy::Register);
  EXPECT_NEAR(d.savingNs, 100e6 - 0.02 * (1 << 30), 1e5);  // all of the registration hidden
  EXPECT_NE(d.sites[0].why.find("before the program needs it"), std::string::npos)
      << d.sites[0].why;
  // Two contexts: nothing made early, and no OpenCL work between the context and the transfer.
  p.contextsCreated = 2;
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  // ... but 50 ms of program builds between them hide that much of it.
  p.candidates[0].leadNs = 50'000'000;
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  EXPECT_NEAR(d.savingNs, 100e6 - 0.02 * (1 << 30) - (0.08 * (1 << 30) - 50e6), 1e5);
  // Two such sites share hetopt's one thread: the earlier-needed block first, the second gets
  // what is left of the slack (100 ms - 86 ms).
  p.candidates = {traced(0x82, 1, 1 << 30, 1, 100e6), traced(0x83, 1, 1 << 30, 1, 100e6)};
  p.candidates[0].leadNs = p.candidates[1].leadNs = 100'000'000;
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  const double pinned = 0.02 * (1 << 30), reg = 0.08 * (1 << 30);
  EXPECT_NEAR(d.savingNs, (100e6 - pinned) + (100e6 - pinned - (reg - (100e6 - reg))), 1e5);
  // A block only a small part of which crosses is priced in full: hiding its registration would
  // lock memory the program never sends.
  p.candidates = {traced(0x85, 1, 1 << 30, 1, 100e6)};
  p.candidates[0].leadNs = 100'000'000;
  p.candidates[0].d2h.maxBytes = 64 << 20;
  EXPECT_FALSE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  // Forced policies and --no-pool price as before.
  PlanOptions noPool;
  noPool.directAllocation = true;
  p.candidates = {traced(0x84, 1, 1 << 30, 1, 100e6)};
  p.candidates[0].leadNs = 100'000'000;
  EXPECT_FALSE(::plan(p, noPool, &plan, &why, &curves, &d)) << why;
}

TEST(RunPlan, TheSummaryLineSaysWhatIsPinnedHowAndThePredictedSaving) {
  analyzer::AppProfile p = eligibleProfile();
  p.breakdown.totalNs = 1.4e9;
  p.candidates = {traced(0x51, 1, 256 << 20, 1, 221e6), traced(0x52, 50, 16 << 20, 50, 50 * 14e6)};
  LineGain curves;
  Plan plan;
  PlanDecision d;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why, &curves, &d)) << why;
  const std::string line = planSummary(plan, d);
  EXPECT_NE(
      line.find("optimizing: 1 site registered in place (~256 MiB at the traced peak), 1 site "
                "from a pool (hybrid, "),
      std::string::npos)
      << line;
  EXPECT_NE(line.find("predicted saving ~"), std::string::npos) << line;
  EXPECT_NE(line.find("--stats shows what was done"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line
}

TEST(RunPlan, SitesThatDoNotRepayTheirPinningStayWithMalloc) {
  analyzer::AppProfile p = eligibleProfile();
  analyzer::CandidateSite once = site(0x44, "hybrid", 64 << 20);
  once.gain.optimizedNs = 7e6;  // pinning its 64 MiB costs more than one transfer saves
  p.candidates = {site(0x11, "hybrid", 1 << 20), site(0x12, "hybrid", 1 << 20), once};
  Plan plan;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why)) << why;
  ASSERT_EQ(plan.sites.size(), 2u);
  EXPECT_EQ(plan.find(0x44, 1), nullptr);
  EXPECT_LT(plan.poolBytes, uint64_t{64} << 20);
}

TEST(RunPlan, ForcedPolicyTakesEveryCandidate) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x11, "standard", 1 << 20), site(0x22, "", 1 << 20, false)};
  PlanOptions o;
  o.forcedPolicy = "opencl";
  Plan plan;
  std::string why;
  ASSERT_TRUE(::plan(p, o, &plan, &why)) << why;
  EXPECT_EQ(plan.sites.size(), 2u);
  EXPECT_EQ(plan.poolPolicy, "opencl");
  o.forcedPolicy = "register";  // every site in place, no pool
  ASSERT_TRUE(::plan(p, o, &plan, &why)) << why;
  EXPECT_EQ(plan.sites.size(), 2u);
  EXPECT_EQ(plan.sites[0].strategy, SiteStrategy::Register);
  EXPECT_EQ(plan.poolBytes, 0u);
  o.forcedPolicy = "standard";
  EXPECT_FALSE(::plan(p, o, &plan, &why));
}

// Sizes read from a damaged DB (tests/fuzz/db_fuzz.cpp edits them): a message, no overflowing
// pool (the double -> uint64_t conversion was undefined beyond 2^64).
TEST(RunPlan, ImplausiblePeakSizesGiveAReasonNotAPool) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(1, "hybrid", UINT64_MAX), site(2, "hybrid", UINT64_MAX / 2)};
  Plan plan;
  std::string why;
  EXPECT_FALSE(::plan(p, {}, &plan, &why));
  EXPECT_NE(why.find("implausible pool"), std::string::npos) << why;
  p.candidates = {site(1, "hybrid", uint64_t{1} << 40),
                  site(2, "hybrid", 1 << 20)};  // 1 TiB still makes a plan
  EXPECT_TRUE(::plan(p, {}, &plan, &why)) << why;
  EXPECT_GE(plan.poolBytes, uint64_t{5} << 38);
}

// ---- in-place registration ----------------------------------------------------------------------

namespace {

analyzer::UntrackedMemory untracked(analyzer::UntrackedMemory::Kind kind, uint64_t bytes,
                                    double savingNs, bool known = true) {
  analyzer::UntrackedMemory u;
  u.kind = kind;
  u.regionBytes = bytes;
  u.h2d.transfers = 10;
  u.gain.known = known;
  u.gain.standardNs = 6e6;
  u.gain.optimizedNs = 6e6 - savingNs;
  return u;
}

}  // namespace

TEST(RunPlan, UntrackedMemoryTheRegisterCurvesSayGainsIsRegisteredWithoutAPool) {
  using Kind = analyzer::UntrackedMemory::Kind;
  analyzer::AppProfile p = eligibleProfile();
  analyzer::UntrackedMemory weights = untracked(Kind::Static, 1 << 20, 5e6);
  weights.moduleKey = 0xabcdef;
  weights.moduleOffset = 0x4020;
  analyzer::UntrackedMemory slow =
      untracked(Kind::Static, 1 << 20, -1e5);  // costs more than it saves
  slow.moduleKey = 0x1234;
  analyzer::UntrackedMemory unknownModule = untracked(Kind::Static, 1 << 20, 5e6);  // moduleKey 0
  analyzer::UntrackedMemory small = untracked(Kind::Mmap, 256 << 10, 5e6);
  small.anonymous = true;
  small.mapBytes = 300 << 10;
  analyzer::UntrackedMemory big = untracked(Kind::Mmap, 8 << 20, 5e6);
  big.anonymous = true;
  big.mapBytes = 16 << 20;
  analyzer::UntrackedMemory file = untracked(Kind::Mmap, 64 << 20, 5e6);  // a file mapping
  file.mapBytes = 64 << 20;
  analyzer::UntrackedMemory stack = untracked(Kind::Stack, 1 << 20, 5e6);
  p.untracked = {weights, slow, unknownModule, small, big, file, stack};
  Plan plan;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why)) << why;
  EXPECT_TRUE(plan.sites.empty());
  EXPECT_EQ(plan.poolBytes, 0u);
  ASSERT_EQ(plan.staticRanges.size(), 1u);
  EXPECT_EQ(plan.staticRanges[0].moduleKey, 0xabcdefu);
  EXPECT_EQ(plan.staticRanges[0].offset, 0x4020u);
  EXPECT_EQ(plan.staticRanges[0].bytes, 1u << 20);
  // From the smallest transferred range to the largest mapping: the file mapping is not one.
  EXPECT_EQ(plan.mmapMinBytes, 256u << 10);
  EXPECT_EQ(plan.mmapMaxBytes, 16u << 20);
  Plan back;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &why)) << why << "\n" << plan.serialize();
  ASSERT_EQ(back.staticRanges.size(), 1u);
  EXPECT_EQ(back.staticRanges[0].moduleKey, 0xabcdefu);
  EXPECT_EQ(back.staticRanges[0].offset, 0x4020u);
  EXPECT_EQ(back.mmapMinBytes, 256u << 10);
  EXPECT_EQ(back.mmapMaxBytes, 16u << 20);
  EXPECT_TRUE(back.sites.empty());

  // Nothing gains: untouched, with the reason.
  p.untracked = {slow};
  EXPECT_FALSE(::plan(p, {}, &plan, &why));
  EXPECT_NE(why.find("does not pay"), std::string::npos) << why;
  // ... unless forced (`--policy register`); still only what can be found again.
  p.untracked = {slow, unknownModule, file, stack};
  PlanOptions o;
  o.forcedPolicy = "register";
  o.forceRegistrations = true;
  ASSERT_TRUE(::plan(p, o, &plan, &why)) << why;
  ASSERT_EQ(plan.staticRanges.size(), 1u);
  EXPECT_EQ(plan.staticRanges[0].moduleKey, 0x1234u);
  EXPECT_FALSE(plan.registersMappings());
}

TEST(RunPlan, SitesAndRegistrationsShareOnePlan) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x22, "hybrid", 4 << 20)};
  analyzer::UntrackedMemory m = untracked(analyzer::UntrackedMemory::Kind::Mmap, 2 << 20, 5e6);
  m.anonymous = true;
  p.untracked = {m};
  Plan plan;
  std::string why;
  ASSERT_TRUE(::plan(p, {}, &plan, &why)) << why;
  EXPECT_EQ(plan.sites.size(), 1u);
  EXPECT_EQ(plan.poolPolicy, "hybrid");
  EXPECT_GT(plan.poolBytes, 0u);
  EXPECT_EQ(plan.mmapMinBytes, 2u << 20);
  EXPECT_EQ(plan.mmapMaxBytes, 2u << 20);  // mapping size unknown: the range's
  Plan back;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &why)) << why;
  EXPECT_NE(back.find(0x22, 1), nullptr);
  EXPECT_TRUE(back.registersMappings());
}

TEST(RunPlan, PlansCarryTheSitesProfileAndTheDirectModeAndPlansWithoutStillRead) {
  analyzer::AppProfile p = eligibleProfile();
  analyzer::CandidateSite s = site(0x11, "opencl", 3 << 20);
  s.allocations = 40;
  s.minAllocBytes = 1 << 20;
  s.maxAllocBytes = 2 << 20;
  s.typicalAllocBytes = 1 << 20;
  s.peakLiveBlocks = 3;
  p.candidates = {s};
  PlanOptions o;
  o.directAllocation = true;
  o.force = true;  // one site saving 1 ms: below a plan's minimum
  Plan plan;
  std::string why;
  ASSERT_TRUE(::plan(p, o, &plan, &why)) << why;
  Plan back;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &why)) << why;
  EXPECT_TRUE(back.directAllocation);
  ASSERT_EQ(back.sites.size(), 1u);
  ASSERT_TRUE(back.sites[0].profiled);
  EXPECT_EQ(back.sites[0].profile.allocations, 40u);
  EXPECT_EQ(back.sites[0].profile.minAllocBytes, 1u << 20);
  EXPECT_EQ(back.sites[0].profile.maxAllocBytes, 2u << 20);
  EXPECT_EQ(back.sites[0].profile.peakLiveBytes, 3u << 20);
  EXPECT_EQ(back.sites[0].profile.peakLiveBlocks, 3u);
  // A plan without either (hand-written, or from before) still reads: pool mode, unprofiled.
  ASSERT_TRUE(parsePlan("hetopt-plan 1\npool opencl 1048576\nsite 1f 0 100\n", &back, &why)) << why;
  EXPECT_FALSE(back.directAllocation);
  EXPECT_FALSE(back.sites[0].profiled);
  // Broken profiles and modes are refused with the line.
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1\nsite 1f 0 100 profile 1 2\n", &back, &why));
  EXPECT_NE(why.find("line 3"), std::string::npos) << why;
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1\nsite 1f 0 100 profile 1 9 5 7 1 1\n", &back,
                         &why));  // min > max
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1\nsite 1f 0 100 extra\n", &back, &why));
  EXPECT_FALSE(
      parsePlan("hetopt-plan 1\npool opencl 1\npool-mode naive\nsite 1f 0 1\n", &back, &why));
}
