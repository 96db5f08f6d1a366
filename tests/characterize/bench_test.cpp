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

TEST(Plan, DefaultsAreTheIssueRanges) {
  BenchPlan p = makeBenchPlan(BenchConfig{}, 512ull << 30, 140ull << 30, 35ull << 30, false);
  ASSERT_FALSE(p.allocSizes.empty());
  EXPECT_EQ(p.allocSizes.front(), 1024u);
  EXPECT_EQ(p.allocSizes.back(), 768 * kMiB);
  EXPECT_EQ(p.allocSizes[p.allocSizes.size() - 2], 512 * kMiB);  // doubling, then the cap
  EXPECT_EQ(p.transferSizes.front(), 1024u);
  EXPECT_EQ(p.transferSizes.back(), 256 * kMiB);
  EXPECT_EQ(p.transferSizes.size(), 19u);
  EXPECT_EQ(p.maxConcurrency, 4);
  EXPECT_TRUE(p.notes.empty());
  for (size_t i = 1; i < p.transferSizes.size(); ++i)
    EXPECT_EQ(p.transferSizes[i], 2 * p.transferSizes[i - 1]);
}

TEST(Plan, QuickIsSmallAndCheap) {
  BenchConfig quick;
  quick.quick = true;
  BenchPlan p = makeBenchPlan(quick, 512ull << 30, 140ull << 30, 35ull << 30, false);
  EXPECT_EQ(p.allocSizes.back(), 16 * kMiB);
  EXPECT_EQ(p.transferSizes.back(), 16 * kMiB);
  EXPECT_LE(p.reps.minReps, BenchPlan{}.reps.maxReps);
  EXPECT_LT(p.reps.targetNs, RepPlan{}.targetNs);
}

TEST(Plan, CapsAreAppliedAndExplained) {
  BenchConfig c;
  c.maxSize = 3 * kMiB;
  BenchPlan p = makeBenchPlan(c, 512ull << 30, 140ull << 30, 35ull << 30, false);
  EXPECT_EQ(p.allocSizes.back(), 3 * kMiB);
  EXPECT_EQ(p.transferSizes.back(), 3 * kMiB);
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("--max-size"), std::string::npos);

  // 4 GiB free host memory: 4 blocks x 5 policies x 2 (device in host memory) in a quarter of it.
  BenchPlan small = makeBenchPlan(BenchConfig{}, 4ull << 30, 140ull << 30, 35ull << 30, true);
  EXPECT_LE(small.transferSizes.back() * 4 * kPolicyCount * 2, 1ull << 30);
  EXPECT_LE(small.allocSizes.back(), 512ull << 20);
  bool explained = false;
  for (const std::string& n : small.notes)
    explained |= n.find("free host memory") != std::string::npos;
  EXPECT_TRUE(explained);

  // A device with a small max allocation.
  BenchPlan dev = makeBenchPlan(BenchConfig{}, 512ull << 30, 140ull << 30, 64 * kMiB, false);
  EXPECT_EQ(dev.transferSizes.back(), 64 * kMiB);
}

// Notes come before the measuring starts (the plan's caps): the bar's first frame is a phase's,
// named, counting from that phase's start.
TEST(Progress, NoFrameBeforeTheFirstPhaseAndTheFirstOneNamesIt) {
  FILE* out = tmpfile();
  ASSERT_NE(out, nullptr);
  Progress progress(out, /*tty=*/true);
  progress.note("transfers capped at 64 MiB");
  progress.start(10);
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
