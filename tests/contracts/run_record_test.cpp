// SPDX-License-Identifier: MIT
/** @file The run record format (contracts/run_record.h) and the plan's `predicted` line. */
#include "contracts/run_record.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace hetopt {
namespace {

RunRecord sample() {
  RunRecord r;
  r.writer = "0.1.0";
  r.programKey = "build-id:abc";
  r.planId = 0x8000000000000001ull;
  r.predictedSavingNs = 1234567;
  r.pid = 42;
  r.startedUnixNs = 1795631813582351129ull;
  r.wallNs = 105836528;
  r.pinned = 20;
  r.pinnedBytes = 20971520;
  r.pageable = 1;
  r.pageableBytes = 4096;
  r.other = 3;
  r.otherBytes = 12;
  r.sites = {{0xf4fd19a6442b1498ull, 21, 20975616, 20, 1}};
  return r;
}

TEST(RunRecord, RoundTrips) {
  RunRecord in = sample(), out;
  std::string error;
  ASSERT_TRUE(parseRunRecord(in.serialize(), &out, &error)) << error;
  EXPECT_EQ(out.serialize(), in.serialize());
  EXPECT_EQ(out.planId, in.planId);
  EXPECT_EQ(out.sites[0].key, in.sites[0].key);
  EXPECT_EQ(out.sites[0].pageable, 1u);
}

RunRecord untouchedSample() {
  RunRecord r;
  r.kind = RunKind::Untouched;
  r.writer = "0.1.0";
  r.programKey = "build-id:abc";
  r.pid = 43;
  r.startedUnixNs = 1795631813682351129ull;
  r.wallNs = 205836528;
  r.exitStatus = 3;
  return r;
}

TEST(RunRecord, UntouchedRunsRoundTripWithTheirExitStatusAndNoPlan) {
  RunRecord in = untouchedSample(), out;
  std::string error;
  const std::string text = in.serialize();
  EXPECT_NE(text.find("kind untouched\n"), std::string::npos) << text;
  EXPECT_NE(text.find("exit 3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("plan "), std::string::npos) << text;
  EXPECT_EQ(text.find("transfers "), std::string::npos) << text;
  ASSERT_TRUE(parseRunRecord(text, &out, &error)) << error;
  EXPECT_EQ(out.kind, RunKind::Untouched);
  EXPECT_EQ(out.exitStatus, 3u);
  EXPECT_EQ(out.wallNs, in.wallNs);
  EXPECT_EQ(out.serialize(), text);
  RunRecord optimized;
  ASSERT_TRUE(parseRunRecord(sample().serialize(), &optimized, &error)) << error;
  EXPECT_EQ(optimized.kind, RunKind::Optimized);
  // Each kind holds only its own facts.
  for (const char* bad : {"plan 0000000000000001 0\n", "transfers 1 1 0 0 0 0\n",
                          "site 12 1 1 1 0\n", "kind frob\n"}) {
    std::string t = text;
    t.insert(t.find("end\n"), bad);
    EXPECT_FALSE(parseRunRecord(t, &out, &error)) << bad;
  }
  std::string noExit = text;
  noExit.erase(noExit.find("exit 3\n"), 7);
  EXPECT_FALSE(parseRunRecord(noExit, &out, &error)) << noExit;
  // Before format 3 only untouched runs had an exit status.
  std::string optimizedWithExit = sample().serialize();
  optimizedWithExit.insert(optimizedWithExit.find("end\n"), "exit 0\n");
  EXPECT_TRUE(parseRunRecord(optimizedWithExit, &out, &error)) << error;
  optimizedWithExit.replace(optimizedWithExit.find(" 3 "), 3, " 2 ");
  EXPECT_FALSE(parseRunRecord(optimizedWithExit, &out, &error));
}

// Format 3: how a run ended (an exit status or a signal, never both), its ledger line and a note.
TEST(RunRecord, Version3RecordsSayHowTheRunEndedAndItsLedgerLine) {
  RunRecord in = untouchedSample(), out;
  in.exitStatus = 0;
  in.signal = 15;
  in.seq = 7;
  in.note = "interrupted";
  std::string error;
  const std::string text = in.serialize();
  EXPECT_NE(text.find("signal 15\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("exit "), std::string::npos) << text;
  ASSERT_TRUE(parseRunRecord(text, &out, &error)) << error;
  EXPECT_EQ(out.signal, 15u);
  EXPECT_EQ(out.seq, 7u);
  EXPECT_EQ(out.note, "interrupted");
  EXPECT_EQ(out.serialize(), text);
  std::string both = text;
  both.insert(both.find("end\n"), "exit 0\n");
  EXPECT_FALSE(parseRunRecord(both, &out, &error)) << both;
  RunRecord optimized = sample();
  optimized.seq = 3;
  optimized.note = "no-shim-record";
  ASSERT_TRUE(parseRunRecord(optimized.serialize(), &out, &error)) << error;
  EXPECT_EQ(out.seq, 3u);
  EXPECT_EQ(out.signal, 0u);
  EXPECT_FALSE(out.exited) << "the shim writes no ending; hetopt's ledger has it";
  for (const char* bad : {"signal 0\n", "signal 300\n", "note two words\n", "seq x\n"}) {
    std::string t = text;
    t.erase(t.find("signal 15\n"), 10);
    t.insert(t.find("end\n"), bad);
    EXPECT_FALSE(parseRunRecord(t, &out, &error)) << bad;
  }
}

// Records the shim wrote before runs had a kind (format 1) still read: they are optimized runs.
TEST(RunRecord, Version1RecordsReadAsOptimizedRuns) {
  const std::string v1 =
      "hetopt-run 1 0.1.0\n"
      "program build-id:abc\n"
      "plan 8000000000000001 1234567\n"
      "pid 42\n"
      "started 1795631813582351129\n"
      "wall 105836528\n"
      "transfers 20 20971520 1 4096 3 12\n"
      "site f4fd19a6442b1498 21 20975616 20 1\n"
      "end\n";
  RunRecord out;
  std::string error;
  ASSERT_TRUE(parseRunRecord(v1, &out, &error)) << error;
  EXPECT_EQ(out.kind, RunKind::Optimized);
  EXPECT_EQ(out.planId, 0x8000000000000001ull);
  EXPECT_EQ(out.wallNs, 105836528u);
  ASSERT_EQ(out.sites.size(), 1u);
  RunRecord expected = sample();
  expected.writer = out.writer;
  EXPECT_EQ(out.serialize(), expected.serialize()) << "the same facts as a record written now";
  // Kinds and exit statuses came with format 2.
  std::string withKind = v1;
  withKind.insert(withKind.find("program"), "kind optimized\n");
  EXPECT_FALSE(parseRunRecord(withKind, &out, &error));
  EXPECT_NE(error.find("unknown entry 'kind'"), std::string::npos) << error;
}

TEST(RunRecord, RefusesPartialCorruptAndOtherVersions) {
  const std::string whole = sample().serialize();
  RunRecord out;
  std::string error;
  // Every cut short of the end line is incomplete, never a smaller record.
  for (size_t n = 0; n + 4 < whole.size(); n += 7)
    EXPECT_FALSE(parseRunRecord(whole.substr(0, n), &out, &error)) << n;
  std::string other = whole;
  other.replace(other.find(" 3 "), 3, " 9 ");
  EXPECT_FALSE(parseRunRecord(other, &out, &error));
  EXPECT_NE(error.find("version 9"), std::string::npos) << error;
  EXPECT_NE(error.find("reads 1 to 3"), std::string::npos) << error;
  for (const char* bad : {"wall -5\n", "wall 5 6\n", "frob 1\n", "site 12 1 1 2 0\n"}) {
    std::string t = whole;
    t.insert(t.find("end\n"), bad);
    EXPECT_FALSE(parseRunRecord(t, &out, &error)) << bad;
  }
  EXPECT_FALSE(parseRunRecord(whole + "wall 1\n", &out, &error));
}

TEST(RunRecord, FilesArePrivateAndNamedBesideThePlan) {
  char dir[] = "/tmp/hetopt-run-record.XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  const std::string plan = std::string(dir) + "/" + planFileName("build-id:abc");
  EXPECT_EQ(plan, std::string(dir) + "/build-id_abc.plan");
  const std::string path = runRecordPath(plan, 42, 1);
  EXPECT_EQ(path, std::string(dir) + "/build-id_abc.42-1.run");
  std::string error;
  ASSERT_TRUE(writeRunRecordFile(path, sample(), &error)) << error;
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  RunRecord back;
  ASSERT_TRUE(readRunRecordFile(path, &back, &error)) << error;
  EXPECT_EQ(back.wallNs, sample().wallNs);
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  EXPECT_FALSE(readRunRecordFile(path, &back, &error)) << "others could have written it";
  unlink(path.c_str());
  rmdir(dir);
}

TEST(RunRecord, PlanCarriesItsPredictionAndIdentity) {
  Plan plan;
  plan.programPath = "/bin/x";
  plan.programKey = "build-id:ab";
  plan.device = "gpu";
  plan.poolBytes = 1 << 20;
  plan.sites.push_back(PlanSite{});
  plan.predictedSavingNs = 7000000;
  Plan back;
  std::string error;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &error)) << error;
  EXPECT_EQ(back.predictedSavingNs, 7000000u);
  EXPECT_EQ(planIdentity(back), planIdentity(plan));
  back.poolBytes *= 2;
  EXPECT_NE(planIdentity(back), planIdentity(plan));
  // Plans of the previous format are still read (no prediction).
  std::string v2 = plan.serialize();
  v2.replace(0, 13, "hetopt-plan 2");
  v2.erase(v2.find("predicted"));
  ASSERT_TRUE(parsePlan(v2, &back, &error)) << error;
  EXPECT_EQ(back.predictedSavingNs, 0u);
}

// `hetopt run` keys the run ledger (and so the verdict) by the identity of the plan it wrote, the
// shim its run record by the identity of the plan it read back; parsing orders the sites by key,
// while the planner writes them by value. Both must name one plan: a plan of several sites once
// had two identities (the report's rows and its verdict named different plans).
TEST(RunRecord, APlanAsWrittenAndAsReadBackHaveOneIdentity) {
  Plan plan;
  plan.programPath = "/bin/x";
  plan.programKey = "build-id:ab";
  plan.device = "gpu";
  plan.poolBytes = 1 << 20;
  for (uint64_t key : {0x30u, 0x10u, 0x20u}) {
    PlanSite s;
    s.key = key;
    s.minBytes = key;
    plan.sites.push_back(s);
  }
  Plan back;
  std::string error;
  ASSERT_TRUE(parsePlan(plan.serialize(), &back, &error)) << error;
  ASSERT_EQ(back.sites.front().key, 0x10u) << "parsing orders the sites by key";
  EXPECT_EQ(planIdentity(back), planIdentity(plan));
  // Still the contents: another site's size range is another plan.
  back.sites[1].minBytes += 1;
  EXPECT_NE(planIdentity(back), planIdentity(plan));
}

}  // namespace
}  // namespace hetopt
