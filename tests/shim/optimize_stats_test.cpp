// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode's counters and what is written from them (shim/core/optimize_stats.h): the
 * heading for each pool state, the human wording of HETOPT_STATS' lines (this is the one test that
 * pins it: integration tests read HETOPT_STATS_JSON), the JSON's counts beside those lines, and
 * the run record beside the plan.
 */
#include "shim/core/optimize_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "contracts/run_record.h"
#include "shim/core/site_ledger.h"
#include "tests/common/temp_dir.h"

namespace hetopt::shim {
namespace {

constexpr uint64_t kMiB = 1 << 20;

Plan twoSitePlan() {
  Plan plan;
  plan.programPath = "/usr/bin/app";
  plan.programKey = "build-id:00112233";
  plan.poolPolicy = "opencl";
  plan.poolBytes = 12 * kMiB;
  plan.sites.resize(2);
  plan.sites[0].key = 0x11;
  plan.sites[1].key = 0x22;
  return plan;
}

PoolFacts readyPool() {
  PoolFacts f;
  f.poolSites = f.anySites = true;
  f.state = Preparation::Pool::Ready;
  f.readyAfterMs = 30.4;
  f.contextExists = true;
  f.contextOrigin = "the program's context";
  f.policy = "opencl";
  f.poolBytes = 12 * kMiB;
  return f;
}

TEST(OptimizeStats, TheHeadingSaysWhichPinnedMemoryInWhichContextAndHowFarItGot) {
  PoolFacts f = readyPool();
  EXPECT_EQ(poolHeading(f), "opencl pool of 12.0 MiB in the program's context, ready after 30 ms");
  f.state = Preparation::Pool::Preparing;
  EXPECT_EQ(poolHeading(f), "opencl pool of 12.0 MiB in the program's context, still preparing");
  f.contextExists = false;
  EXPECT_EQ(poolHeading(f),
            "nothing pinned: the program made no OpenCL context on the planned device");
  f.state = Preparation::Pool::Failed;
  f.failure = "forked child";
  EXPECT_EQ(poolHeading(f), "no pool (forked child)");
  f.direct = true;
  EXPECT_EQ(poolHeading(f), "no direct allocation (forked child)");
  f.state = Preparation::Pool::Ready;
  f.contextOrigin = "its own context";
  EXPECT_EQ(poolHeading(f),
            "direct opencl allocation (no pool) in its own context, ready after 30 ms");
  PoolFacts registered;
  registered.anySites = true;
  registered.contextOrigin = "the early context (the program's)";
  EXPECT_EQ(poolHeading(registered),
            "no pool (sites registered in place) in the early context (the program's)");
  registered.anySites = false;
  EXPECT_EQ(poolHeading(registered),
            "no pool (registrations only) in the early context (the program's)");
  EXPECT_STREQ(poolStateName(registered), "none");
  EXPECT_STREQ(poolStateName(readyPool()), "ready");
  PoolFacts startupOnly;
  startupOnly.startupOnly = true;
  EXPECT_EQ(poolHeading(startupOnly), "nothing pinned: a start-up-only plan");
  EXPECT_STREQ(poolStateName(startupOnly), "none");
}

struct Fixture {
  Plan plan = twoSitePlan();
  Conformance conformance;
  SiteLedger ledger{2};
  OptimizeCounters counters;
  StatsFacts facts;
  Fixture() {
    conformance.expect(plan);
    facts.plan = &plan;
    facts.planPath = "/tmp/app.plan";
    facts.pool = readyPool();
    facts.heading = poolHeading(facts.pool);
    facts.conformance = &conformance;
    facts.ledger = &ledger;
    facts.wallNs = 123;
    facts.pid = 77;
    counters.servedBlock(2 * kMiB, 2 * kMiB);
    counters.servedBlock(kMiB, kMiB);
    counters.servedBlock(0, 16);
    OptimizeCounters::bump(counters.released);
    OptimizeCounters::bump(counters.poolFull);
    counters.pinned.add(true, kMiB);
    counters.pinned.add(true, kMiB);
    counters.pinned.add(false, kMiB);
    counters.other.add(true, kMiB / 2);
    ledger.count(0, kMiB, SiteLedger::Outcome::Pinned, true);
  }
};

// The one test of the human wording; scripts read the JSON.
TEST(OptimizeStats, TheLinesSayOneFactEachUnderTheHeading) {
  Fixture x;
  EXPECT_EQ(statsText(x.facts, x.counters),
            "opencl pool of 12.0 MiB in the program's context, ready after 30 ms\n"
            "  conformant\n"
            "  2 candidate sites\n"
            "  redirected 3 allocations (3.0 MiB), released 1\n"
            "  fallbacks: 0 with no pool (not ready in time, or it failed)\n"
            "  fallbacks: 1 pool full, 0 moved out by realloc\n"
            "  transfers from pinned pool memory: 2 h2d (2.0 MiB), 1 d2h (1.0 MiB)\n"
            "  transfers from other memory: 1 h2d (0.5 MiB), 0 d2h (0.0 MiB)\n"
            "  start-up: the program's own context; no programs built ahead");
  x.facts.startup.context = "early";
  x.facts.startup.contextWaitMs = 12.5;
  x.facts.startup.buildAhead = true;
  x.facts.startup.programs.recipe = 3;
  x.facts.startup.programs.builtAhead = 3;
  x.facts.startup.programs.handedOver = 2;
  x.facts.startup.programs.buildsAnswered = 1;
  x.facts.startup.programs.rebuilt = 1;
  x.facts.startup.programs.notReached = 1;
  x.facts.startup.programs.waitMs = 4.25;
  EXPECT_NE(statsText(x.facts, x.counters)
                .find("\n  start-up: the early context, made while the program started (the "
                      "program waited 12.5 ms for it); 3 of 3 programs built ahead, 2 handed over "
                      "(1 builds answered, 1 built again with other options), 1 asked for before "
                      "they were reached; the program waited 4.2 ms for builds"),
            std::string::npos)
      << statsText(x.facts, x.counters);
  x.facts.startup = {};
  x.conformance.diverge("a block of %d bytes", 5);
  OptimizeCounters::bump(x.counters.afterDivergence, 4);
  x.facts.direct = true;
  x.facts.directFirstFailure = "mlock refused";
  OptimizeCounters::bump(x.counters.directFailed);
  const std::string text = statsText(x.facts, x.counters);
  EXPECT_NE(text.find("\n  deactivated: a block of 5 bytes\n  4 allocations not redirected after "
                      "deactivation\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fallbacks: 1 policy failed (first: mlock refused), 0 moved out"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transfers from pinned direct memory: 2 h2d"), std::string::npos) << text;
}

// One of a thing is not "1 things" (a user saw "1 candidate sites").
TEST(OptimizeStats, OneSiteAndOneAllocationAreSingular) {
  Fixture x;
  x.plan.sites.resize(1);
  OptimizeCounters one;
  one.servedBlock(kMiB, kMiB);
  const std::string text = statsText(x.facts, one);
  EXPECT_NE(text.find("\n  1 candidate site\n  redirected 1 allocation (1.0 MiB), released 0\n"),
            std::string::npos)
      << text;
}

TEST(OptimizeStats, TheJsonHoldsTheSameCountsAndTheLines) {
  Fixture x;
  const std::string text = statsText(x.facts, x.counters);
  const std::string json = statsJson(x.facts, x.counters, text);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.back(), '\n');
  for (const char* want :
       {"\"pool\":\"opencl pool of 12.0 MiB in the program's context, ready after 30 ms\"",
        "\"pool_state\":\"ready\"",
        "\"pool_policy\":\"opencl\"",
        "\"pool_bytes\":12582912",
        "\"context\":\"the program's context\"",
        "\"startup\":{\"context\":\"program\",\"programs_in_recipe\":0,"
        "\"programs_built_ahead\":0,\"programs_handed_over\":0,",
        "\"queues_handed_over\":0,\"wait_ms\":{\"context\":0,\"programs\":0,\"queues\":0}}",
        "\"pid\":77",
        "\"wall_ns\":123",
        "\"conformant\":true",
        "\"candidate_sites\":2",
        "\"redirected\":3",
        "\"redirected_bytes\":3145728",
        "\"released\":1",
        "\"fallback_no_pool\":0",
        "\"fallback_pool_full\":1",
        "\"moved_out_by_realloc\":0",
        "\"transfers_pinned_pool\":{\"h2d\":2,\"h2d_bytes\":2097152,\"d2h\":1,\"d2h_bytes\":"
        "1048576}",
        "\"transfers_other\":{\"h2d\":1,\"h2d_bytes\":524288,\"d2h\":0,\"d2h_bytes\":0}",
        "\"run\":{\"pinned\":1,\"pinned_bytes\":1048576",
        "\"key\":\"0000000000000011\"",
        "\"  transfers from other memory: 1 h2d (0.5 MiB), 0 d2h (0.0 MiB)\""})
    EXPECT_NE(json.find(want), std::string::npos) << want << "\n" << json;
}

TEST(OptimizeStats, UsageCountsLiveBlocksAndTransfersFromRedirectedMemory) {
  Fixture x;
  const Conformance::Usage u = x.counters.usage(5);
  EXPECT_EQ(u.served, 3u);
  EXPECT_EQ(u.liveBlocks, 2u);
  EXPECT_EQ(u.liveBytes, 3 * kMiB + 16);
  EXPECT_EQ(u.transfers, 3u + 5u);  // pinned pool transfers and registered blocks'
}

TEST(OptimizeStats, TheRunRecordGoesBesideThePlanFromThePlansProcessOnly) {
  hetopt::testing::TempDir dir;
  Fixture x;
  const std::string planPath = dir.file("app.plan");
  RunClock clock = RunClock::start();
  EXPECT_EQ(clock.pid, getpid());
  EXPECT_LT(clock.wallNs(), 60ull * 1000000000ull);
  writeRunRecord(x.plan, planPath, x.ledger, clock);
  RunRecord r;
  std::string error;
  ASSERT_TRUE(readRunRecordFile(runRecordPath(planPath, getpid(), clock.startUnixNs), &r, &error))
      << error;
  EXPECT_EQ(r.programKey, x.plan.programKey);
  EXPECT_EQ(r.pinned, 1u);
  EXPECT_EQ(r.pinnedBytes, kMiB);
  RunClock other = clock;
  other.pid = getpid() + 1;  // a forked child holds its parent's counters: it writes none
  other.startUnixNs += 1;
  writeRunRecord(x.plan, planPath, x.ledger, other);
  EXPECT_FALSE(
      readRunRecordFile(runRecordPath(planPath, other.pid, other.startUnixNs), &r, &error));
}

// `hetopt run --verify=off` says "nothing timed or kept": its runs must not reach the report.
TEST(OptimizeStats, NoRunRecordWhenVerifyIsOff) {
  hetopt::testing::TempDir dir;
  Fixture x;
  const std::string planPath = dir.file("app.plan");
  const RunClock clock = RunClock::start();
  setenv("HETOPT_VERIFY", "off", 1);
  writeRunRecord(x.plan, planPath, x.ledger, clock);
  unsetenv("HETOPT_VERIFY");
  RunRecord r;
  std::string error;
  EXPECT_FALSE(readRunRecordFile(runRecordPath(planPath, getpid(), clock.startUnixNs), &r, &error));
}

}  // namespace
}  // namespace hetopt::shim
