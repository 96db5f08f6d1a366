// SPDX-License-Identifier: MIT
/**
 * @file The run ledger (contracts/run_ledger.h): lines round-trip, a write cut short is skipped,
 * anything else that does not parse is corrupt, runs of one program started at the same time get
 * their own lines, and compaction keeps the newest runs and every revert.
 */
#include "contracts/run_ledger.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace hetopt {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/hetopt-ledger.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RunLedger, LinesRoundTrip) {
  TempDir dir;
  const std::string path = dir.path + "/p.ledger";
  std::string error;
  bool corrupt = false;
  {
    LedgerFile f;
    ASSERT_TRUE(f.open(path, &error, &corrupt)) << error;
    uint64_t a = 0, b = 0, c = 0;
    ASSERT_TRUE(f.start(LedgerKind::Optimized, 0xabc, 1000, 5, &a, &error)) << error;
    ASSERT_TRUE(f.start(LedgerKind::Control, 0xabc, 2000, 6, &b, &error)) << error;
    ASSERT_TRUE(f.start(LedgerKind::Declined, 0, 3000, 7, &c, &error)) << error;
    EXPECT_EQ(a, 1u);
    EXPECT_EQ(b, 2u);
    EXPECT_EQ(c, 3u);
    ASSERT_TRUE(f.finish(b, 99, 123456, RunEnd::Signaled, 9, &error)) << error;
    ASSERT_TRUE(f.finish(a, 98, 654321, RunEnd::Exited, 0, &error)) << error;
    EXPECT_FALSE(f.finish(a, 98, 1, RunEnd::Exited, 0, &error)) << "ended twice";
    ASSERT_TRUE(f.revert(0xabc, a, "failed", &error)) << error;
  }
  LedgerFile g;
  ASSERT_TRUE(g.open(path, &error, &corrupt)) << error;
  const Ledger& l = g.ledger();
  ASSERT_EQ(l.runs.size(), 3u);
  EXPECT_EQ(l.runs[0].kind, LedgerKind::Optimized);
  EXPECT_EQ(l.runs[0].wallNs, 654321u);
  EXPECT_EQ(l.runs[1].end, RunEnd::Signaled);
  EXPECT_EQ(l.runs[1].code, 9u);
  EXPECT_EQ(l.runs[1].pid, 99u);
  EXPECT_EQ(l.runs[2].end, RunEnd::Running);
  EXPECT_TRUE(l.reverted(0xabc));
  EXPECT_FALSE(l.reverted(0xdef));
  Ledger parsed;
  ASSERT_TRUE(parseLedger(serializeLedger(l), &parsed, &error)) << error;
  EXPECT_EQ(serializeLedger(parsed), serializeLedger(l));
}

TEST(RunLedger, AWriteCutShortIsSkippedAndAnythingElseIsCorrupt) {
  const std::string good =
      "hetopt-ledger 1\nrun 1 optimized 0000000000000abc 1000 5\nend 1 6 100 exit 0\n";
  Ledger l;
  std::string error;
  ASSERT_TRUE(parseLedger(good + "run 2 contr", &l, &error)) << error;
  EXPECT_EQ(l.runs.size(), 1u);
  for (const char* bad : {"run 3 optimized 1 2 3\n", "run 2 frob 1 2 3\n", "end 1 6 100 exit 0\n",
                          "end 9 6 100 exit 0\n", "end 2 6 100 exit 0\n", "frob\n",
                          "revert 12 1 two words\n", "run 2 optimized 1 2 -3\n"}) {
    EXPECT_FALSE(parseLedger(good + bad, &l, &error)) << bad;
  }
  EXPECT_FALSE(parseLedger("hetopt-ledger 2\n", &l, &error));
  EXPECT_NE(error.find("format 2"), std::string::npos) << error;
  EXPECT_FALSE(parseLedger("garbage\n", &l, &error));

  TempDir dir;
  const std::string path = dir.path + "/p.ledger";
  { std::ofstream(path) << good << "end 1 6 100 exit 0\n"; }
  LedgerFile f;
  bool corrupt = false;
  EXPECT_FALSE(f.open(path, &error, &corrupt));
  EXPECT_TRUE(corrupt);
  ASSERT_TRUE(setLedgerAside(path, &error)) << error;
  EXPECT_EQ(slurp(path + ".corrupt"), good + "end 1 6 100 exit 0\n") << "kept whole for a look";
  EXPECT_TRUE(f.open(path, &error, &corrupt)) << "a new ledger starts: " << error;
  EXPECT_TRUE(f.ledger().runs.empty());
}

TEST(RunLedger, ACutShortLineIsDroppedBeforeTheNextIsAppended) {
  TempDir dir;
  const std::string path = dir.path + "/p.ledger";
  { std::ofstream(path) << "hetopt-ledger 1\nrun 1 optimized 0000000000000abc 1000 5\nend 1 6 1"; }
  LedgerFile f;
  std::string error;
  bool corrupt = false;
  ASSERT_TRUE(f.open(path, &error, &corrupt)) << error;
  ASSERT_EQ(f.ledger().runs.size(), 1u);
  EXPECT_EQ(f.ledger().runs[0].end, RunEnd::Running);
  ASSERT_TRUE(f.finish(1, 6, 100, RunEnd::Lost, 0, &error)) << error;
  f.close();
  EXPECT_EQ(slurp(path),
            "hetopt-ledger 1\nrun 1 optimized 0000000000000abc 1000 5\nend 1 6 100 lost 0\n");
}

TEST(RunLedger, RunsStartedAtTheSameTimeEachGetTheirOwnLine) {
  TempDir dir;
  const std::string path = dir.path + "/p.ledger";
  constexpr int kProcesses = 8, kRuns = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < kRuns; ++i) {
        LedgerFile f;
        std::string error;
        bool corrupt = false;
        uint64_t seq = 0;
        if (!f.open(path, &error, &corrupt) ||
            !f.start(LedgerKind::Optimized, 1, 1, static_cast<uint64_t>(getpid()), &seq, &error))
          _exit(1);
        f.close();
        if (!f.open(path, &error, &corrupt) || !f.finish(seq, 1, 1, RunEnd::Exited, 0, &error))
          _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t c : children) {
    int status = 0;
    ASSERT_EQ(waitpid(c, &status, 0), c);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  LedgerFile f;
  std::string error;
  bool corrupt = false;
  ASSERT_TRUE(f.open(path, &error, &corrupt)) << error;
  ASSERT_EQ(f.ledger().runs.size(), static_cast<size_t>(kProcesses * kRuns));
  std::set<uint64_t> seqs;
  for (const LedgerRun& r : f.ledger().runs) {
    seqs.insert(r.seq);
    EXPECT_EQ(r.end, RunEnd::Exited) << r.seq;
  }
  EXPECT_EQ(seqs.size(), static_cast<size_t>(kProcesses * kRuns));
}

TEST(RunLedger, CompactionKeepsTheNewestRunsAndEveryRevert) {
  TempDir dir;
  const std::string path = dir.path + "/p.ledger";
  const size_t total = 2 * LedgerFile::kLedgerKeptRuns + 5;
  std::string error;
  bool corrupt = false;
  {
    LedgerFile f;
    ASSERT_TRUE(f.open(path, &error, &corrupt)) << error;
    ASSERT_TRUE(f.revert(0x77, 1, "failed", &error));
    for (size_t i = 0; i < total; ++i) {
      uint64_t seq = 0;
      ASSERT_TRUE(f.start(LedgerKind::Control, 1, i, 1, &seq, &error)) << error;
      ASSERT_TRUE(f.finish(seq, 1, i, RunEnd::Exited, 0, &error)) << error;
    }
  }
  LedgerFile f;
  ASSERT_TRUE(f.open(path, &error, &corrupt)) << error;
  ASSERT_EQ(f.ledger().runs.size(), LedgerFile::kLedgerKeptRuns);
  EXPECT_EQ(f.ledger().runs.back().seq, total);
  EXPECT_EQ(f.ledger().runs.back().end, RunEnd::Exited);
  EXPECT_TRUE(f.ledger().reverted(0x77));
  uint64_t seq = 0;
  ASSERT_TRUE(f.start(LedgerKind::Optimized, 1, 1, 1, &seq, &error)) << error;
  EXPECT_EQ(seq, total + 1);
}

}  // namespace
}  // namespace hetopt
