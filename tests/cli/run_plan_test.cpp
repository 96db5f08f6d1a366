// SPDX-License-Identifier: MIT
/** @file Profile -> plan decisions of `hetopt run`. */
#include "cli/run_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

using namespace hetopt;
using namespace hetopt::cli;

namespace {

analyzer::CandidateSite site(uint64_t key, const char* policy, uint64_t peakLive, bool known = true) {
  analyzer::CandidateSite s;
  s.siteKey = key;
  s.gain.known = known;
  s.gain.policy = policy;
  s.peakLiveBytes = peakLive;
  s.gain.standardNs = 2e6;
  s.gain.optimizedNs = 1e6;  // saves 1 ms
  return s;
}

analyzer::AppProfile eligibleProfile() {
  analyzer::AppProfile p;
  p.program.path = "/opt/app";
  p.program.buildId = "abcd";
  p.device = "NVIDIA CUDA / NVIDIA H100";
  p.eligibility.eligible = true;
  p.eligibility.reason = "ratio 2.5 >= 0.1";
  return p;
}

}  // namespace

TEST(RunPlan, SitesThatGainBecomeThePlanWithAPoolForTheirPeak) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x11, "register", 64 << 20), site(0x22, "hybrid", 4 << 20),
                  site(0x33, "standard", 1 << 20)};
  Plan plan;
  std::string why;
  ASSERT_TRUE(buildPlan(p, {}, &plan, &why)) << why;
  ASSERT_EQ(plan.sites.size(), 2u);  // the standard site stays with malloc
  EXPECT_EQ(plan.poolPolicy, "hybrid");  // register (in place) -> the pooled policy as fast
  EXPECT_EQ(plan.programKey, p.program.key());
  EXPECT_EQ(plan.device, p.device);
  EXPECT_GE(plan.poolBytes, uint64_t{68} << 20);
  EXPECT_EQ(plan.poolBytes % (1 << 20), 0u);
  EXPECT_FALSE(plan.hasProgramStamp);  // `hetopt run` adds the file's stamp
  plan.hasProgramStamp = true;
  plan.programStamp = {2049, 1234567, 883416, 1763900000123456789, -5};
  std::string text = plan.serialize();
  Plan back;
  ASSERT_TRUE(parsePlan(text, &back, &why)) << why;
  EXPECT_TRUE(back.hasProgramStamp);
  EXPECT_TRUE(back.programStamp == plan.programStamp);
  EXPECT_NE(back.find(0x11, 12345), nullptr);
  EXPECT_EQ(back.find(0x33, 12345), nullptr);
}

TEST(RunPlan, IneligibleOrNothingToGainRunsUntouchedWithAReason) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x11, "opencl", 1 << 20)};
  p.eligibility.eligible = false;
  p.eligibility.reason = "dispatch ratio 0.01 < 0.1";
  Plan plan;
  std::string why;
  EXPECT_FALSE(buildPlan(p, {}, &plan, &why));
  EXPECT_NE(why.find("0.01"), std::string::npos) << why;
  PlanOptions force;
  force.ignoreEligibility = true;
  EXPECT_TRUE(buildPlan(p, force, &plan, &why)) << why;

  p = eligibleProfile();
  p.candidates = {site(0x11, "standard", 1 << 20), site(0x22, "hybrid", 1 << 20, false)};
  EXPECT_FALSE(buildPlan(p, {}, &plan, &why));
  EXPECT_NE(why.find("does not pay"), std::string::npos) << why;
}

TEST(RunPlan, SitesThatDoNotRepayTheirPinningStayWithMalloc) {
  analyzer::AppProfile p = eligibleProfile();
  analyzer::CandidateSite once = site(0x44, "hybrid", 64 << 20);
  once.gain.optimizedNs = 3e6;  // pinning its 64 MiB costs more than one transfer saves
  p.candidates = {site(0x11, "hybrid", 1 << 20), once};
  Plan plan;
  std::string why;
  ASSERT_TRUE(buildPlan(p, {}, &plan, &why)) << why;
  ASSERT_EQ(plan.sites.size(), 1u);
  EXPECT_EQ(plan.sites[0].key, 0x11u);
  EXPECT_LT(plan.poolBytes, uint64_t{64} << 20);
}

TEST(RunPlan, ForcedPolicyTakesEveryCandidate) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x11, "standard", 1 << 20), site(0x22, "", 1 << 20, false)};
  PlanOptions o;
  o.forcedPolicy = "opencl";
  Plan plan;
  std::string why;
  ASSERT_TRUE(buildPlan(p, o, &plan, &why)) << why;
  EXPECT_EQ(plan.sites.size(), 2u);
  EXPECT_EQ(plan.poolPolicy, "opencl");
  o.forcedPolicy = "standard";
  EXPECT_FALSE(buildPlan(p, o, &plan, &why));
}

// Sizes read from a damaged DB (tests/fuzz/db_fuzz.cpp edits them): a message, no overflowing
// pool (the double -> uint64_t conversion was undefined beyond 2^64).
TEST(RunPlan, ImplausiblePeakSizesGiveAReasonNotAPool) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(1, "hybrid", UINT64_MAX), site(2, "hybrid", UINT64_MAX / 2)};
  Plan plan;
  std::string why;
  EXPECT_FALSE(buildPlan(p, {}, &plan, &why));
  EXPECT_NE(why.find("implausible pool"), std::string::npos) << why;
  p.candidates = {site(1, "hybrid", uint64_t{1} << 40)};  // 1 TiB still makes a plan
  EXPECT_TRUE(buildPlan(p, {}, &plan, &why)) << why;
  EXPECT_GE(plan.poolBytes, uint64_t{5} << 38);
}

TEST(PlanFile, RejectsOtherVersionsAndGarbage) {
  Plan plan;
  std::string why;
  EXPECT_FALSE(parsePlan("hetopt-plan 2\n", &plan, &why));
  EXPECT_NE(why.find("version 2"), std::string::npos) << why;
  EXPECT_FALSE(parsePlan("", &plan, &why));
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nsite zz 0 1\n", &plan, &why));
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nsite 12 10 5\n", &plan, &why));  // empty range
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nbogus\n", &plan, &why));
  // Truncated plans: a cut line, or whole lines missing.
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1048576\nsite 1f 0 10", &plan, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nprogram /bin/x build-id:ab\n", &plan, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1048576\n", &plan, &why));
  EXPECT_TRUE(parsePlan("hetopt-plan 1\n# comment\npool opencl 1048576\nsite 1f 0 100\n", &plan, &why))
      << why;
  EXPECT_EQ(plan.poolBytes, 1048576u);
  EXPECT_FALSE(plan.hasProgramStamp);
  EXPECT_NE(plan.find(0x1f, 50), nullptr);
  EXPECT_EQ(plan.find(0x1f, 500), nullptr);
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nstamp 1 2 x 4 5\npool opencl 1048576\nsite 1f 0 100\n", &plan, &why));
  EXPECT_NE(why.find("stamp"), std::string::npos) << why;
}

// ---- in-place registration (issue 6) -----------------------------------------------------------

namespace {

analyzer::UntrackedMemory untracked(analyzer::UntrackedMemory::Kind kind, uint64_t bytes,
                                    double savingNs, bool known = true) {
  analyzer::UntrackedMemory u;
  u.kind = kind;
  u.regionBytes = bytes;
  u.h2d.transfers = 10;
  u.gain.known = known;
  u.gain.standardNs = 2e6;
  u.gain.optimizedNs = 2e6 - savingNs;
  return u;
}

}  // namespace

TEST(RunPlan, UntrackedMemoryTheRegisterCurvesSayGainsIsRegisteredWithoutAPool) {
  using Kind = analyzer::UntrackedMemory::Kind;
  analyzer::AppProfile p = eligibleProfile();
  analyzer::UntrackedMemory weights = untracked(Kind::Static, 1 << 20, 1e6);
  weights.moduleKey = 0xabcdef;
  weights.moduleOffset = 0x4020;
  analyzer::UntrackedMemory slow = untracked(Kind::Static, 1 << 20, -1e5);  // costs more than it saves
  slow.moduleKey = 0x1234;
  analyzer::UntrackedMemory unknownModule = untracked(Kind::Static, 1 << 20, 1e6);  // moduleKey 0
  analyzer::UntrackedMemory small = untracked(Kind::Mmap, 256 << 10, 1e6);
  small.anonymous = true;
  small.mapBytes = 300 << 10;
  analyzer::UntrackedMemory big = untracked(Kind::Mmap, 8 << 20, 1e6);
  big.anonymous = true;
  big.mapBytes = 16 << 20;
  analyzer::UntrackedMemory file = untracked(Kind::Mmap, 64 << 20, 1e6);  // a file mapping
  file.mapBytes = 64 << 20;
  analyzer::UntrackedMemory stack = untracked(Kind::Stack, 1 << 20, 1e6);
  p.untracked = {weights, slow, unknownModule, small, big, file, stack};
  Plan plan;
  std::string why;
  ASSERT_TRUE(buildPlan(p, {}, &plan, &why)) << why;
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
  EXPECT_FALSE(buildPlan(p, {}, &plan, &why));
  EXPECT_NE(why.find("does not pay"), std::string::npos) << why;
  // ... unless forced (`--policy register`); still only what can be found again.
  p.untracked = {slow, unknownModule, file, stack};
  PlanOptions o;
  o.forcedPolicy = "register";
  o.forceRegistrations = true;
  ASSERT_TRUE(buildPlan(p, o, &plan, &why)) << why;
  ASSERT_EQ(plan.staticRanges.size(), 1u);
  EXPECT_EQ(plan.staticRanges[0].moduleKey, 0x1234u);
  EXPECT_FALSE(plan.registersMappings());
}

TEST(RunPlan, SitesAndRegistrationsShareOnePlan) {
  analyzer::AppProfile p = eligibleProfile();
  p.candidates = {site(0x22, "hybrid", 4 << 20)};
  analyzer::UntrackedMemory m = untracked(analyzer::UntrackedMemory::Kind::Mmap, 2 << 20, 1e6);
  m.anonymous = true;
  p.untracked = {m};
  Plan plan;
  std::string why;
  ASSERT_TRUE(buildPlan(p, {}, &plan, &why)) << why;
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

TEST(PlanFile, RegisterLines) {
  Plan plan;
  std::string why;
  const std::string head = "hetopt-plan 1\nprogram /bin/x build-id:ab\ndevice gpu\npool none 0\n";
  ASSERT_TRUE(parsePlan(head + "register static 00000000deadbeef 4096 65536\n"
                               "register static 1 0 1\nregister mmap 1048576 8388608\n",
                        &plan, &why))
      << why;
  ASSERT_EQ(plan.staticRanges.size(), 2u);
  EXPECT_EQ(plan.staticRanges[0].moduleKey, 0xdeadbeefu);
  EXPECT_EQ(plan.staticRanges[0].offset, 4096u);
  EXPECT_EQ(plan.staticRanges[0].bytes, 65536u);
  EXPECT_EQ(plan.mmapMinBytes, 1048576u);
  EXPECT_EQ(plan.mmapMaxBytes, 8388608u);
  EXPECT_TRUE(plan.sites.empty());
  ASSERT_TRUE(parsePlan(head + "register mmap 0 1\n", &plan, &why)) << why;  // registrations only

  // Malformed.
  for (const char* bad : {"register\n", "register heap 1 2\n", "register static zz 0 10\n",
                          "register static 0 0 10\n",          // no module
                          "register static 1f 0 0\n",          // empty range
                          "register static 1f -5 10\n", "register static 1f 0 10 extra\n",
                          "register static 1f 18446744073709551615 2\n",  // wraps
                          "register mmap 10\n", "register mmap 10 5\n", "register mmap 0 0\n",
                          "register mmap 1 2\nregister mmap 3 4\n"}) {
    EXPECT_FALSE(parsePlan(head + bad, &plan, &why)) << bad;
    EXPECT_NE(why.find("plan line"), std::string::npos) << why;
  }
  // Truncated: a cut last line (whatever line it is), or every registration gone (no site either).
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nprogram /bin/x ", &plan, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(parsePlan(head + "register static 1f 0 10", &plan, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(parsePlan(head, &plan, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  // No pool line at all, or a pool without sites / sites without a pool.
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nregister mmap 1 2\n", &plan, &why));
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1048576\nregister mmap 1 2\n", &plan, &why));
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool none 0\nsite 1f 0 10\n", &plan, &why));
}

TEST(PlanFile, CarriesTheSitesProfileAndTheDirectModeAndReadsPlansWithout) {
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
  Plan plan;
  std::string why;
  ASSERT_TRUE(buildPlan(p, o, &plan, &why)) << why;
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
  EXPECT_FALSE(parsePlan("hetopt-plan 1\npool opencl 1\npool-mode naive\nsite 1f 0 1\n", &back, &why));
}

// Found by the plan fuzz target (tests/fuzz/plan_fuzz.cpp): a program path with a blank was
// written as a plan that read back as "unexpected" words, so `hetopt run` never optimized
// programs under "My Programs"; a device name with a line break would have added plan lines.
TEST(PlanFile, WhatTheWriterWritesReadsBackAsItself) {
  Plan plan;
  plan.programPath = "/home/user/My Programs/solver v2 ";
  plan.programKey = "build-id:abcd";
  plan.device = "NVIDIA CUDA / NVIDIA H100  PCIe";
  plan.poolPolicy = "hybrid";
  plan.poolBytes = 2 << 20;
  plan.sites = {{7, 0, 100}, {7, 200, 300}, {9, 0, UINT64_MAX}};
  ASSERT_EQ(plan.unwritableReason(), "");
  Plan back;
  std::string why;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &why)) << why;
  EXPECT_EQ(back.programPath, plan.programPath);
  EXPECT_EQ(back.programKey, plan.programKey);
  EXPECT_EQ(back.device, plan.device);
  ASSERT_EQ(back.sites.size(), 3u);
  EXPECT_EQ(back.sites[1].minBytes, 200u);  // equal keys keep their order
  EXPECT_NE(back.find(7, 250), nullptr);

  for (auto edit : {+[](Plan* p) { p->device = "cpu\nsite 1 0 1"; },
                    +[](Plan* p) { p->programPath = "/bin/x\r"; },
                    +[](Plan* p) { p->programKey = "build-id:ab cd"; },
                    +[](Plan* p) { p->poolPolicy = "opencl\t"; }, +[](Plan* p) { p->sites.clear(); }}) {
    Plan bad = plan;
    edit(&bad);
    EXPECT_NE(bad.unwritableReason(), "");
    char dir[] = "/tmp/hetopt-plan-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir));
    EXPECT_FALSE(writePlanFile(std::string(dir) + "/p.plan", bad, &why));
    EXPECT_NE(why.find("cannot write the plan"), std::string::npos) << why;
    rmdir(dir);
  }
}
