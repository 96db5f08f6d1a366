// SPDX-License-Identifier: MIT
/** @file The plan file format (contracts/plan.h): what the shim accepts, and that what the writer
 * writes reads back as itself. `hetopt run`'s decisions are tested in tests/analyzer/planner_test.
 */
#include "contracts/plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

using namespace hetopt;

TEST(PlanFile, StrategiesWaitsAndTheRegisterCostRoundTrip) {
  Plan plan;
  std::string why;
  const std::string head = "hetopt-plan 2\nprogram /bin/x build-id:ab\ndevice gpu\n";
  ASSERT_TRUE(parsePlan(head + "pool none 0\nregister-cost 20000 83886\n"
                               "site 1f 0 100 register wait 250000 profile 1 64 64 64 64 1\n",
                        &plan, &why))
      << why;
  ASSERT_EQ(plan.sites.size(), 1u);
  EXPECT_EQ(plan.sites[0].strategy, SiteStrategy::Register);
  EXPECT_EQ(plan.sites[0].waitNsPerMiB, 250000u);
  EXPECT_TRUE(plan.sites[0].profiled);
  EXPECT_EQ(plan.registerNs(2 << 20), 20000u + 2 * 83886u);
  Plan back;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &why)) << why;
  EXPECT_EQ(back.sites[0].strategy, SiteStrategy::Register);
  EXPECT_EQ(back.sites[0].waitNsPerMiB, 250000u);
  EXPECT_EQ(back.registerNsPerMiB, 83886u);
  // A pool belongs to pooled sites only; words in their order, once.
  for (const char* bad :
       {"pool opencl 1048576\nsite 1f 0 100 register\n", "pool none 0\nsite 1f 0 100\n",
        "pool none 0\nsite 1f 0 100 register register\n",
        "pool none 0\nsite 1f 0 100 wait 5 register\n",
        "pool none 0\nsite 1f 0 100 register wait 0\n",
        "pool none 0\nsite 1f 0 100 register wait\n",
        "pool none 0\nregister-cost 1\nsite 1f 0 1 register\n"})
    EXPECT_FALSE(parsePlan(head + bad, &plan, &why)) << bad;
}

TEST(PlanFile, RejectsOtherVersionsAndGarbage) {
  Plan plan;
  std::string why;
  EXPECT_FALSE(parsePlan("hetopt-plan 4\n", &plan, &why));
  EXPECT_NE(why.find("version 4"), std::string::npos) << why;
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
  EXPECT_TRUE(
      parsePlan("hetopt-plan 1\n# comment\npool opencl 1048576\nsite 1f 0 100\n", &plan, &why))
      << why;
  EXPECT_EQ(plan.poolBytes, 1048576u);
  EXPECT_FALSE(plan.hasProgramStamp);
  EXPECT_NE(plan.find(0x1f, 50), nullptr);
  EXPECT_EQ(plan.find(0x1f, 500), nullptr);
  EXPECT_FALSE(parsePlan("hetopt-plan 1\nstamp 1 2 x 4 5\npool opencl 1048576\nsite 1f 0 100\n",
                         &plan, &why));
  EXPECT_NE(why.find("stamp"), std::string::npos) << why;
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
                          "register static 0 0 10\n",  // no module
                          "register static 1f 0 0\n",  // empty range
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

  for (auto edit :
       {+[](Plan* p) { p->device = "cpu\nsite 1 0 1"; },
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

// A plan whose only gain is the start-up: no site, no registration, `context early`. Its last line
// says so, so that one cut at any line end reads as incomplete, never as a smaller plan.
TEST(PlanFile, AStartUpOnlyPlanSaysSoInItsLastLineAndReadsBackOnlyWhole) {
  Plan plan;
  plan.programPath = "/usr/bin/app";
  plan.programKey = "build-id:ab";
  plan.device = "gpu";
  plan.poolPolicy = "none";
  plan.earlyContext = true;
  plan.buildAheadRecipe = "/home/u/.cache/hetopt/plans/app.programs";
  plan.buildAheadPrograms = 2;
  plan.buildAheadNs = 30000000;
  plan.predictedSavingNs = 150000000;
  ASSERT_TRUE(plan.startupOnly());
  ASSERT_EQ(plan.unwritableReason(), "");
  const std::string text = plan.serialize();
  ASSERT_GE(text.size(), 14u);
  EXPECT_EQ(text.substr(text.size() - 14), "\nstartup-only\n") << text;
  Plan back;
  std::string why;
  ASSERT_TRUE(parsePlan(text, &back, &why)) << why;
  EXPECT_TRUE(back.startupOnly());
  EXPECT_TRUE(back.earlyContext);
  EXPECT_EQ(back.buildAheadPrograms, 2u);
  EXPECT_EQ(back.predictedSavingNs, 150000000u);
  EXPECT_EQ(back.serialize(), text);
  // Cut at every line end, or inside its last line: incomplete or truncated, never a plan.
  for (size_t end = text.find('\n'); end + 1 < text.size(); end = text.find('\n', end + 1)) {
    EXPECT_FALSE(parsePlan(text.substr(0, end + 1), &back, &why)) << text.substr(0, end + 1);
    EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  }
  EXPECT_FALSE(parsePlan(text.substr(0, text.size() - 4), &back, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;

  // Inconsistent: beside a site or registration, without the early context, with direct
  // allocation, anything after it, or words after it.
  const std::string head = "hetopt-plan 3\nprogram /bin/x build-id:ab\ndevice gpu\n";
  ASSERT_TRUE(parsePlan(head + "pool none 0\ncontext early\nstartup-only\n# end\n", &back, &why))
      << why;
  for (const char* bad : {"pool none 0\ncontext early\nsite 1f 0 100 register\nstartup-only\n",
                          "pool none 0\ncontext early\nregister mmap 1 2\nstartup-only\n",
                          "pool none 0\nstartup-only\n",
                          "pool none 0\ncontext early\npool-mode direct\nstartup-only\n",
                          "pool none 0\ncontext early\nstartup-only\npredicted 5\n",
                          "pool none 0\ncontext early\nstartup-only\nstartup-only\n",
                          "pool none 0\ncontext early\nstartup-only now\n",
                          "pool opencl 1048576\ncontext early\nstartup-only\n"}) {
    EXPECT_FALSE(parsePlan(head + bad, &back, &why)) << bad;
    EXPECT_NE(why.find("plan line"), std::string::npos) << why;
  }
  // The writer refuses what the reader would.
  for (auto edit :
       {+[](Plan* p) { p->earlyContext = false; }, +[](Plan* p) { p->directAllocation = true; }}) {
    Plan bad = plan;
    edit(&bad);
    EXPECT_NE(bad.unwritableReason(), "");
  }
}
