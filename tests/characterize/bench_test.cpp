// SPDX-License-Identifier: MIT
/** @file Benchmark plumbing that needs no device: data patterns, the size plan, the progress bar.
 */
#include "characterize/bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "characterize/bench_plan.h"
#include "characterize/progress.h"

namespace hetopt::characterize {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(Pattern, NonZeroAndVerified) {
  std::vector<unsigned char> a(3 * 65536 + 77);
  fillPattern(a.data(), a.size(), 12345);
  EXPECT_EQ(verifyPattern(a.data(), a.size(), 12345), SIZE_MAX);
  size_t zeros = std::count(a.begin(), a.end(), 0);
  EXPECT_LT(zeros, a.size() / 100);  // random-looking bytes, not all zero
  EXPECT_NE(verifyPattern(a.data(), a.size(), 12346), SIZE_MAX);  // seed matters
}

TEST(Pattern, FindsTheFirstBadByte) {
  std::vector<unsigned char> a(200000);
  fillPattern(a.data(), a.size(), 7);
  a[131073] ^= 0x10;
  EXPECT_EQ(verifyPattern(a.data(), a.size(), 7), 131073u);
  std::vector<unsigned char> zero(4096, 0);
  EXPECT_EQ(verifyPattern(zero.data(), zero.size(), 7), 0u);
}

TEST(Pattern, DataAtTheWrongOffsetIsCaught) {
  // Two 64 KiB chunks swapped: same bytes per chunk except their stamps.
  std::vector<unsigned char> a(4 * 65536), b(65536);
  fillPattern(a.data(), a.size(), 99);
  memcpy(b.data(), a.data() + 65536, 65536);
  memcpy(a.data() + 65536, a.data() + 2 * 65536, 65536);
  memcpy(a.data() + 2 * 65536, b.data(), 65536);
  size_t bad = verifyPattern(a.data(), a.size(), 99);
  EXPECT_GE(bad, 65536u);  // within the second chunk's 8-byte stamp
  EXPECT_LT(bad, 65536u + 8);
}

// Every transfer size's group holds at most the budget, and the device half of its memory.
void expectWithinBudget(const BenchPlan& p, uint64_t deviceGlobalMem) {
  EXPECT_LE(p.heldBytes, p.budget);
  EXPECT_LE(2 * p.allocSizes.back(), p.budget);
  for (const TransferStep& t : p.transfers) {
    EXPECT_LE(t.hostBytes, p.budget) << t.size;
    EXPECT_LE(t.deviceBytes, deviceGlobalMem / 2) << t.size;
    EXPECT_LE(t.hostBytes, p.heldBytes) << t.size;
    EXPECT_GE(t.concurrency, 1);
    EXPECT_GE(t.policiesAtOnce, 1);
  }
}

TEST(Plan, DefaultsAreTheIssueRanges) {
  BenchPlan p = makeBenchPlan(BenchConfig{}, 512ull << 30, 140ull << 30, 35ull << 30, false);
  ASSERT_FALSE(p.allocSizes.empty());
  EXPECT_EQ(p.allocSizes.front(), 1024u);
  EXPECT_EQ(p.allocSizes.back(), 768 * kMiB);
  EXPECT_EQ(p.allocSizes[p.allocSizes.size() - 2], 512 * kMiB);  // doubling, then the cap
  ASSERT_EQ(p.transfers.size(), 21u);
  EXPECT_EQ(p.transfers.front().size, 1024u);
  EXPECT_EQ(p.transfers.back().size, 1024 * kMiB);
  EXPECT_EQ(p.maxConcurrency, 4);
  EXPECT_TRUE(p.notes.empty());
  for (size_t i = 1; i < p.transfers.size(); ++i)
    EXPECT_EQ(p.transfers[i].size, 2 * p.transfers[i - 1].size);
  // Concurrent transfers up to 256 MiB, every policy at once.
  for (const TransferStep& t : p.transfers) {
    EXPECT_EQ(t.concurrency, t.size <= kConcurrencyMaxSize ? 4 : 1) << t.size;
    EXPECT_EQ(t.policiesAtOnce, kPolicyCount) << t.size;
  }
  EXPECT_EQ(p.budget, 128ull << 30);  // a quarter of what is free
  expectWithinBudget(p, 140ull << 30);
}

TEST(Plan, QuickIsSmallAndCheap) {
  BenchConfig quick;
  quick.quick = true;
  BenchPlan p = makeBenchPlan(quick, 512ull << 30, 140ull << 30, 35ull << 30, false);
  EXPECT_EQ(p.allocSizes.back(), 16 * kMiB);
  EXPECT_EQ(p.transfers.back().size, 16 * kMiB);
  EXPECT_LE(p.reps.minReps, BenchPlan{}.reps.maxReps);
  EXPECT_LT(p.reps.targetNs, RepPlan{}.targetNs);
}

TEST(Plan, CapsAreAppliedAndExplained) {
  BenchConfig c;
  c.maxSize = 3 * kMiB;
  BenchPlan p = makeBenchPlan(c, 512ull << 30, 140ull << 30, 35ull << 30, false);
  EXPECT_EQ(p.allocSizes.back(), 3 * kMiB);
  EXPECT_EQ(p.transfers.back().size, 3 * kMiB);
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("--max-size"), std::string::npos);

  // A device with a small max allocation.
  BenchPlan dev = makeBenchPlan(BenchConfig{}, 512ull << 30, 140ull << 30, 64 * kMiB, false);
  EXPECT_EQ(dev.transfers.back().size, 64 * kMiB);
}

// A user's 24 GiB machine with 23 GB free measured transfers only up to 148 MiB, "capped by free
// host memory", while holding 6.1 GiB: every block of every policy and queue at once, and a device
// buffer for each in host memory. Now the sizes reach 1 GiB, larger sizes holding fewer blocks.
TEST(Plan, TransfersReachOneGiBWithinTheBudgetOfA24GiBMachine) {
  const uint64_t free = 23'000'000'000ull;
  // Its CPU device (PoCL): device buffers in host memory.
  BenchPlan cpu = makeBenchPlan(BenchConfig{}, free, 24ull << 30, 6ull << 30, true);
  EXPECT_EQ(cpu.budget, free / 4);
  ASSERT_FALSE(cpu.transfers.empty());
  EXPECT_GE(cpu.transfers.back().size, 1024 * kMiB);
  expectWithinBudget(cpu, 24ull << 30);
  const TransferStep& top = cpu.transfers.back();
  EXPECT_EQ(top.concurrency, 1);
  EXPECT_EQ(top.policiesAtOnce, 2);  // 2 GiB a policy (block and buffer) in 5.35 GiB
  EXPECT_EQ(top.hostBytes, 4096 * kMiB);
  // A discrete GPU on the same host: every policy's 1 GiB block at once.
  BenchPlan gpu = makeBenchPlan(BenchConfig{}, free, 16ull << 30, 4ull << 30, false);
  EXPECT_EQ(gpu.transfers.back().size, 1024 * kMiB);
  EXPECT_EQ(gpu.transfers.back().policiesAtOnce, kPolicyCount);
  expectWithinBudget(gpu, 16ull << 30);
  // What the user is told.
  EXPECT_EQ(cpu.memoryText(),
            "at most 5 GiB held at once (budget 5.4 GiB: a quarter of the 21.4 GiB available; "
            "--max-memory sets it)");
}

TEST(Plan, LittleMemoryMeasuresLessAtOnceAndSaysSo) {
  BenchConfig c;
  c.memoryBudget = 96 * kMiB;
  BenchPlan p = makeBenchPlan(c, 23'000'000'000ull, 24ull << 30, 6ull << 30, true);
  EXPECT_EQ(p.budget, 96 * kMiB);
  expectWithinBudget(p, 24ull << 30);
  EXPECT_EQ(p.allocSizes.back(), 48 * kMiB);
  EXPECT_EQ(p.transfers.back().size, 48 * kMiB);  // one block and its buffer
  EXPECT_EQ(p.transfers.back().policiesAtOnce, 1);
  std::string notes;
  for (const std::string& n : p.notes) notes += n + "\n";
  EXPECT_NE(notes.find("transfer sizes capped at 48 MiB by the memory budget of 96 MiB"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("from 4 MiB, at most 2 concurrent transfers"), std::string::npos) << notes;
  EXPECT_NE(notes.find("from 16 MiB, the policies are measured 3 at a time"), std::string::npos)
      << notes;
  EXPECT_NE(p.memoryText().find("(budget 96 MiB: --max-memory)"), std::string::npos);
  // Free memory unknown: a budget of 1 GiB, said.
  BenchPlan unknown = makeBenchPlan(BenchConfig{}, 0, 24ull << 30, 6ull << 30, true);
  EXPECT_EQ(unknown.budget, 1024 * kMiB);
  EXPECT_NE(unknown.memoryText().find("free host memory unknown"), std::string::npos);
  expectWithinBudget(unknown, 24ull << 30);
}

// A made-up machine that runs a plan's steps: operations cost latency + bytes / bandwidth, faster
// while the data fits a cache (1 MiB), with +-10% noise; a group's blocks cost bytes / 3 GB/s.
struct Machine {
  double latencyNs, gbs;
  double opNs(double bytes) const { return latencyNs + bytes / (bytes <= kMiB ? 3 * gbs : gbs); }
  double stepNs(const WorkStep& s, const RepPlan& reps, size_t i) const {
    const double noise = 1 + 0.1 * (static_cast<int>(i * 7919 % 21) - 10) / 10.0;
    if (s.once) return noise * s.bytes / 3.0;
    return noise * s.ops * reps.runs(opNs(s.bytes)) * opNs(s.bytes);
  }
};

// The time left follows the planned work: on the machines below it stays within a factor 2 of the
// truth once a tenth of the phase has run, and within 25% once half has. Extrapolating the time
// spent by steps weighted 1 + bytes / 16 MiB, as the bar did, said 0.9 s in all for the first
// machine's quick transfer phase of 4.7 s: 9x off in what was left.
TEST(PhaseEstimate, TimeLeftFollowsThePlannedWork) {
  BenchConfig quick;
  quick.quick = true;
  const BenchPlan plans[] = {
      makeBenchPlan(quick, 23'000'000'000ull, 24ull << 30, 6ull << 30, true),
      makeBenchPlan(BenchConfig{}, 23'000'000'000ull, 24ull << 30, 6ull << 30, true),
      makeBenchPlan(BenchConfig{}, 120ull << 30, 80ull << 30, 20ull << 30, false)};
  const Machine machines[] = {{30e3, 6}, {10e3, 25}};
  for (const BenchPlan& plan : plans) {
    for (const Machine& m : machines) {
      for (bool transfers : {false, true}) {
        PhaseEstimate e(transfers ? transferSteps(plan) : allocationSteps(plan), plan.reps);
        std::vector<double> ns;
        double total = 0;
        for (size_t i = 0; i < e.steps().size(); ++i) {
          ns.push_back(m.stepNs(e.steps()[i], plan.reps, i));
          total += ns.back();
        }
        double elapsed = 0;
        for (size_t i = 0; i < ns.size(); ++i) {
          const WorkStep& s = e.steps()[i];
          elapsed += ns[i];
          e.done(ns[i], s.once ? 1 : s.ops * plan.reps.runs(m.opNs(s.bytes)));
          const double left = e.secondsLeft() * 1e9, truth = total - elapsed;
          if (elapsed < total / 10 || truth < total / 20) continue;
          const std::string where =
              std::string(transfers ? "transfers" : "allocation") + " step " + std::to_string(i) +
              " of " + std::to_string(ns.size()) + " (" + s.detail + "), " + std::to_string(m.gbs) +
              " GB/s, plan up to " + std::to_string(plan.transfers.back().size);
          // A faster regime ahead (the cache) is not known before it is measured; its sizes
          // are small, so half the time is measured before the estimate is close.
          EXPECT_GT(left / truth, 0.5) << where;
          EXPECT_LT(left / truth, 2.0) << where;
          if (elapsed > total / 2) {
            EXPECT_NEAR(left / truth, 1.0, 0.25) << where;
          }
        }
      }
    }
  }
}

// Notes come before the measuring starts (the plan's caps): the bar's first frame is a phase's,
// named, counting from that phase's start.
TEST(Progress, NoFrameBeforeTheFirstPhaseAndTheFirstOneNamesIt) {
  FILE* out = tmpfile();
  ASSERT_NE(out, nullptr);
  Progress progress(out, /*tty=*/true);
  progress.note("transfers capped at 64 MiB");
  progress.start();
  progress.phase("allocation", 10);
  progress.finish();
  rewind(out);
  std::string text;
  char buf[512];
  for (size_t n; (n = fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
  fclose(out);
  const size_t note = text.find("  note: transfers capped at 64 MiB\n");
  ASSERT_NE(note, std::string::npos) << text;
  const size_t frame = text.find("s, estimating");
  ASSERT_NE(frame, std::string::npos) << text;
  EXPECT_EQ(text.find("s, estimating", frame + 1), std::string::npos) << "one frame only: " << text;
  EXPECT_GT(frame, note) << text;
  const std::string line = text.substr(text.rfind('\r', frame));
  EXPECT_NE(line.find("allocation"), std::string::npos) << line;
  EXPECT_NE(line.find("  0.0 s, estimating"), std::string::npos)
      << "counted from the phase's start: " << line;
}

}  // namespace
}  // namespace hetopt::characterize
