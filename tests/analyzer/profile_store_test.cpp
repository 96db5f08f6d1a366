// SPDX-License-Identifier: MIT
/** @file Profiles in the DB: round trip, replacement, stale builds, foreign files. */
#include "analyzer/profile_store.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analyzer/compare.h"
#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

class ProfileStore : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = testing::makeTempDir();
    m_path = m_dir + "/hetopt.db";
  }
  void TearDown() override { system(("rm -rf '" + m_dir + "'").c_str()); }
  std::unique_ptr<Db> open() {
    std::string error;
    auto db = Db::open(m_path, Db::Mode::ReadWriteCreate, &error);
    EXPECT_TRUE(db) << error;
    return db;
  }
  std::string m_dir, m_path;
};

void expectSameTransfers(const TransferStats& a, const TransferStats& b) {
  EXPECT_EQ(a.transfers, b.transfers);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.typicalBytes, b.typicalBytes);
  EXPECT_EQ(a.maxBytes, b.maxBytes);
  EXPECT_DOUBLE_EQ(a.deviceNs, b.deviceNs);
  ASSERT_EQ(a.sizes.size(), b.sizes.size());
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    EXPECT_EQ(a.sizes[i].bytes, b.sizes[i].bytes);
    EXPECT_EQ(a.sizes[i].count, b.sizes[i].count);
  }
}

TEST_F(ProfileStore, RoundTrip) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  p.contextsCreated = 1;
  p.firstContextDevices = 1;
  p.startup = {600'000'000, 970'000'000, 365'000'000, 276'000'000};
  std::string error;
  int64_t id = 0;
  ASSERT_TRUE(storeProfile(*db, p, &id, &error)) << error;
  EXPECT_GT(id, 0);
  AppProfile q;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*db, p.program, &q, &lookup, &error)) << error;
  ASSERT_EQ(lookup.status, ProfileLookup::Status::Found);
  EXPECT_EQ(lookup.id, id);
  EXPECT_EQ(q.program.key(), p.program.key());
  EXPECT_EQ(q.device, p.device);
  EXPECT_EQ(q.eligibility.eligible, true);
  EXPECT_DOUBLE_EQ(q.eligibility.ratio, 0.4);
  EXPECT_EQ(q.eligibility.reason, p.eligibility.reason);
  EXPECT_DOUBLE_EQ(q.breakdown.cpuSyncNs, p.breakdown.cpuSyncNs);
  EXPECT_EQ(q.breakdown.kernels, 25u);
  EXPECT_EQ(q.warnings, p.warnings);
  EXPECT_EQ(q.hostOnlyAllocations, 250u);
  EXPECT_EQ(q.contextsCreated, 1u);
  EXPECT_EQ(q.firstContextDevices, 1u);
  EXPECT_EQ(q.startup.firstCallNs, 600'000'000u);
  EXPECT_EQ(q.startup.firstContextNs, 970'000'000u);
  EXPECT_EQ(q.startup.enumerateNs, 365'000'000u);
  EXPECT_EQ(q.startup.contextNs, 276'000'000u);
  ASSERT_EQ(q.candidates.size(), 2u);
  const CandidateSite& c = q.candidates[0];
  EXPECT_EQ(c.siteKey, 0xfedcba9876543210ull);
  ASSERT_EQ(c.frames.size(), 2u);
  EXPECT_EQ(c.frames[1].offset, 0xffffffffffff0000ull);
  EXPECT_EQ(c.frames[0].buildId, p.candidates[0].frames[0].buildId);
  EXPECT_EQ(c.location.describe(), "main at main.cpp:29");
  EXPECT_EQ(c.peakLiveBytes, p.candidates[0].peakLiveBytes);
  expectSameTransfers(c.h2d, p.candidates[0].h2d);
  expectSameTransfers(c.d2h, p.candidates[0].d2h);
  EXPECT_TRUE(c.gain.known);
  EXPECT_DOUBLE_EQ(c.gain.savingNs(), 5e6);
  EXPECT_EQ(q.candidates[1].location.describe(), "libio.so+0x99");
  EXPECT_FALSE(q.candidates[1].gain.known);
  ASSERT_EQ(q.untracked.size(), 1u);
  EXPECT_EQ(q.untracked[0].kind, UntrackedMemory::Kind::Static);
  expectSameTransfers(q.untracked[0].h2d, p.untracked[0].h2d);
}

// What `hetopt run` needs to register untracked memory in place survives the DB, bit for bit.
TEST_F(ProfileStore, UntrackedMemoryKeepsWhereItIsAndItsGain) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  UntrackedMemory& s = p.untracked[0];
  s.moduleKey = 0xf00dfacecafebeefull;  // above INT64_MAX
  s.moduleOffset = 0x1234560;
  s.regionBytes = 1 << 20;
  s.gain.known = true;
  s.gain.note = "Fake GPU";
  s.gain.standardNs = 3e6;
  s.gain.optimizedNs = 1e6;
  UntrackedMemory m;
  m.kind = UntrackedMemory::Kind::Mmap;
  m.anonymous = true;
  m.mapBytes = 8 << 20;
  m.regionBytes = 4 << 20;
  m.h2d.add(4 << 20, 3, 100);
  m.h2d.finish();
  p.untracked.push_back(m);
  std::string error;
  ASSERT_TRUE(storeProfile(*db, p, nullptr, &error)) << error;
  AppProfile q;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*db, p.program, &q, &lookup, &error)) << error;
  ASSERT_EQ(q.untracked.size(), 2u);
  const UntrackedMemory& s2 = q.untracked[0];
  EXPECT_EQ(s2.moduleKey, 0xf00dfacecafebeefull);
  EXPECT_EQ(s2.moduleOffset, 0x1234560u);
  EXPECT_EQ(s2.regionBytes, 1u << 20);
  EXPECT_TRUE(s2.gain.known);
  EXPECT_EQ(s2.gain.note, "Fake GPU");
  EXPECT_DOUBLE_EQ(s2.gain.savingNs(), 2e6);
  EXPECT_TRUE(s2.registrable());
  const UntrackedMemory& m2 = q.untracked[1];
  EXPECT_EQ(m2.kind, UntrackedMemory::Kind::Mmap);
  EXPECT_TRUE(m2.anonymous);
  EXPECT_EQ(m2.mapBytes, 8u << 20);
  EXPECT_FALSE(m2.gain.known);
  EXPECT_TRUE(m2.registrable());
  expectSameTransfers(m2.h2d, m.h2d);
}

TEST_F(ProfileStore, ReanalysisReplacesAndInfiniteRatioSurvives) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  std::string error;
  int64_t first = 0, second = 0;
  ASSERT_TRUE(storeProfile(*db, p, &first, &error)) << error;
  ASSERT_TRUE(storeRunBreakdown(*db, first, {"optimized", p.breakdown}, &error)) << error;
  p.candidates.pop_back();
  p.eligibility.ratio = HUGE_VAL;
  ASSERT_TRUE(storeProfile(*db, p, &second, &error)) << error;
  AppProfile q;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*db, p.program, &q, &lookup, &error)) << error;
  EXPECT_EQ(lookup.id, second);
  EXPECT_EQ(q.candidates.size(), 1u);
  EXPECT_TRUE(std::isinf(q.eligibility.ratio));
  std::vector<BreakdownBar> bars;
  ASSERT_TRUE(loadRunBreakdowns(*db, first, &bars, &error)) << error;
  EXPECT_TRUE(bars.empty()) << "old profile's run breakdowns must go with it";
}

TEST_F(ProfileStore, RebuiltBinaryGetsStaleNotTheOldProfile) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  std::string error;
  ASSERT_TRUE(storeProfile(*db, p, nullptr, &error)) << error;
  ProgramIdentity rebuilt = p.program;
  rebuilt.buildId = "ffff";
  AppProfile q;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*db, rebuilt, &q, &lookup, &error)) << error;
  EXPECT_EQ(lookup.status, ProfileLookup::Status::Stale);
  EXPECT_EQ(lookup.storedKey, p.program.key());
  EXPECT_TRUE(q.candidates.empty());
  ProgramIdentity other = p.program;
  other.path = "/elsewhere/solver";
  ASSERT_TRUE(loadProfile(*db, other, &q, &lookup, &error)) << error;
  EXPECT_EQ(lookup.status, ProfileLookup::Status::None);
}

TEST_F(ProfileStore, ScriptsNamesAndLaunchersRoundTrip) {
  auto db = open();
  std::string error;
  AppProfile a = testing::sampleProfile();
  a.program.path = "/usr/bin/python3.11";
  a.program.script = {ScriptRef::Kind::File, "/w/a.py", std::string(64, 'a')};
  a.forkedChildren = 3;
  AppProfile b = a;
  b.program.script = {ScriptRef::Kind::File, "/w/b.py", std::string(64, 'b')};
  ASSERT_TRUE(storeProfile(*db, a, nullptr, &error)) << error;
  ASSERT_TRUE(storeProfile(*db, b, nullptr, &error)) << error;
  AppProfile q;
  ProfileLookup lookup;
  ASSERT_TRUE(loadProfile(*db, a.program, &q, &lookup, &error)) << error;
  ASSERT_EQ(lookup.status, ProfileLookup::Status::Found) << "b.py must not replace a.py's profile";
  EXPECT_EQ(q.program.key(), a.program.key());
  EXPECT_EQ(q.program.path, "/usr/bin/python3.11");
  EXPECT_EQ(q.program.script, a.program.script);
  EXPECT_EQ(q.forkedChildren, 3u);
  // The same script edited: stale, not someone else's profile.
  ProgramIdentity edited = a.program;
  edited.script.hash = std::string(64, 'c');
  ASSERT_TRUE(loadProfile(*db, edited, &q, &lookup, &error)) << error;
  EXPECT_EQ(lookup.status, ProfileLookup::Status::Stale);
  // Named: one per name, found whatever the program's key now, which the lookup says.
  AppProfile named = a;
  named.program.profileName = "big";
  ASSERT_TRUE(storeProfile(*db, named, nullptr, &error)) << error;
  named.program.script.hash = std::string(64, 'd');
  ASSERT_TRUE(storeProfile(*db, named, nullptr, &error)) << error;
  ASSERT_TRUE(loadProfile(*db, named.program, &q, &lookup, &error)) << error;
  ASSERT_EQ(lookup.status, ProfileLookup::Status::Found);
  EXPECT_EQ(q.program.profileName, "big");
  EXPECT_EQ(q.program.script.hash, std::string(64, 'd'))
      << "the newer named profile replaced the older";
  ProgramIdentity other = named.program;
  other.script.hash = std::string(64, 'e');
  ASSERT_TRUE(loadProfile(*db, other, &q, &lookup, &error)) << error;
  EXPECT_EQ(lookup.status, ProfileLookup::Status::Found);
  EXPECT_EQ(lookup.storedKey, named.program.key());
  // A launcher's record: replaced per launcher, entries in order.
  LauncherRecord rec{"/w/wrap.sh",
                     "build-id:dash+script-sha256:00",
                     "2026-01-01T00:00:00Z",
                     {{42, "/w/a.py", a.program.key(), a.program.describe()},
                      {43, "/w/b.py", b.program.key(), b.program.describe()}}};
  ASSERT_TRUE(storeLauncher(*db, rec, &error)) << error;
  rec.launched.pop_back();
  ASSERT_TRUE(storeLauncher(*db, rec, &error)) << error;
  LauncherRecord got;
  bool found = false;
  ASSERT_TRUE(loadLauncher(*db, rec.launcherPath, rec.launcherKey, &got, &found, &error)) << error;
  ASSERT_TRUE(found);
  ASSERT_EQ(got.launched.size(), 1u);
  EXPECT_EQ(got.launched[0].pid, 42u);
  EXPECT_EQ(got.launched[0].key, a.program.key());
  ASSERT_TRUE(loadLauncher(*db, rec.launcherPath, "build-id:other", &got, &found, &error)) << error;
  EXPECT_FALSE(found) << "a changed wrapper is not the traced one";
}

TEST_F(ProfileStore, DbWithoutProfilesHasNone) {
  auto db = open();
  AppProfile q;
  ProfileLookup lookup;
  std::string error;
  ASSERT_TRUE(loadProfile(*db, testing::sampleProfile().program, &q, &lookup, &error)) << error;
  EXPECT_EQ(lookup.status, ProfileLookup::Status::None);
  std::vector<BreakdownBar> bars;
  EXPECT_TRUE(loadRunBreakdowns(*db, 1, &bars, &error)) << error;
}

// `hetopt report`: the shim's run records become runs of the profile, with their sites; only the
// newest are kept, and they are not the labelled bars of loadRunBreakdowns.
TEST_F(ProfileStore, RunsFromRunRecordsKeepTheirFactsAndOnlyTheNewest) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  std::string error;
  int64_t id = 0;
  ASSERT_TRUE(storeProfile(*db, p, &id, &error)) << error;
  ASSERT_TRUE(storeRunBreakdown(*db, id, {"standard", p.breakdown}, &error)) << error;
  for (uint64_t i = 1; i <= 3; ++i) {
    RunRecord r;
    r.writer = "0.1.0";
    r.programKey = p.program.key();
    r.planId = 0xfedcba9876543210ull;  // high bit set: stored bit for bit
    r.predictedSavingNs = 1.5e6;
    r.pid = 100 + i;
    r.startedUnixNs = i * 1000000000ull;
    r.wallNs = 40000000 + i;
    r.pinned = 10 * i;
    r.pinnedBytes = 1 << 20;
    r.pageable = 1;
    r.other = 2;
    r.sites = {{p.candidates[0].siteKey, 11 * i, 4096, 10 * i, 1}};
    StoredRun run = runFromRecord(p, r);
    EXPECT_DOUBLE_EQ(run.bar.breakdown.totalNs, static_cast<double>(r.wallNs));
    EXPECT_DOUBLE_EQ(run.bar.breakdown.kernelNs + run.bar.breakdown.communicationNs +
                         run.bar.breakdown.cpuSyncNs,
                     static_cast<double>(r.wallNs));
    ASSERT_TRUE(storeRun(*db, id, run, 2, &error)) << error;
  }
  std::vector<StoredRun> runs;
  ASSERT_TRUE(loadRuns(*db, id, &runs, &error)) << error;
  ASSERT_EQ(runs.size(), 2u) << "only the 2 newest are kept";
  EXPECT_EQ(runs[0].record.pid, 102u);
  EXPECT_EQ(runs[1].record.pid, 103u);
  const RunRecord& r = runs[1].record;
  EXPECT_EQ(r.planId, 0xfedcba9876543210ull);
  EXPECT_EQ(r.wallNs, 40000003u);
  EXPECT_EQ(r.pinned, 30u);
  EXPECT_EQ(r.pageable, 1u);
  EXPECT_EQ(r.other, 2u);
  EXPECT_DOUBLE_EQ(r.predictedSavingNs, 1.5e6);
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].key, p.candidates[0].siteKey);
  EXPECT_EQ(r.sites[0].transfers, 33u);
  EXPECT_EQ(r.sites[0].pinned, 30u);
  std::vector<BreakdownBar> bars;
  ASSERT_TRUE(loadRunBreakdowns(*db, id, &bars, &error)) << error;
  ASSERT_EQ(bars.size(), 1u);
  EXPECT_EQ(bars[0].label, "standard");
  DbStatement sites(*db, "SELECT count(*) FROM app_run_sites");
  ASSERT_EQ(sites.step(), DbStatement::Step::Row);
  EXPECT_EQ(sites.columnInt(0), 2) << "the pruned run's sites go with it";
}

// Untouched runs (`hetopt run --untouched`) are stored beside the optimized ones with their kind
// and exit status; each kind keeps its own newest runs, so many plain runs never push out the
// optimized ones they are compared with.
TEST_F(ProfileStore, UntouchedRunsKeepTheirKindAndArePrunedApart) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  std::string error;
  int64_t id = 0;
  ASSERT_TRUE(storeProfile(*db, p, &id, &error)) << error;
  auto store = [&](RunKind kind, uint64_t i) {
    RunRecord r;
    r.kind = kind;
    r.writer = "0.1.0";
    r.programKey = p.program.key();
    r.pid = 100 + i;
    r.startedUnixNs = i * 1000000000ull;
    r.wallNs = 50000000 + i;
    r.exitStatus = kind == RunKind::Untouched ? i % 4 : 0;
    StoredRun run = runFromRecord(p, r);
    EXPECT_EQ(run.bar.label.rfind(runKindName(kind), 0), 0u) << run.bar.label;
    ASSERT_TRUE(storeRun(*db, id, run, 2, &error)) << error;
  };
  store(RunKind::Optimized, 1);
  store(RunKind::Optimized, 2);
  for (uint64_t i = 3; i <= 6; ++i) store(RunKind::Untouched, i);
  std::vector<StoredRun> runs;
  ASSERT_TRUE(loadRuns(*db, id, &runs, &error)) << error;
  ASSERT_EQ(runs.size(), 4u) << "2 of each kind";
  EXPECT_EQ(runs[0].record.kind, RunKind::Optimized);
  EXPECT_EQ(runs[1].record.kind, RunKind::Optimized);
  EXPECT_EQ(runs[2].record.kind, RunKind::Untouched);
  EXPECT_EQ(runs[2].record.pid, 105u);
  EXPECT_EQ(runs[2].record.exitStatus, 1u);
  EXPECT_EQ(runs[3].record.pid, 106u);
  EXPECT_EQ(runs[3].record.exitStatus, 2u);
  EXPECT_EQ(runs[3].record.wallNs, 50000006u);
}

// A run whose pinned transfers cover a candidate's sites saves its predicted share of the traced
// communication; one with nothing pinned saves none.
TEST_F(ProfileStore, RunBreakdownCutsCommunicationByThePinnedShare) {
  AppProfile p = testing::sampleProfile();
  CandidateSite& c = p.candidates[0];
  c.gain.known = true;
  c.gain.standardNs = 10e6;
  c.gain.optimizedNs = 5e6;  // pinned: half the transfer time
  c.h2d.deviceNs = 4e6;
  c.d2h.deviceNs = 0;
  p.eligibility.communicationNs = p.breakdown.communicationNs;  // not scaled to the wall time
  RunRecord r;
  r.wallNs = static_cast<uint64_t>(p.breakdown.totalNs);
  r.sites = {{c.siteKey, 4, 0, 0, 0}};
  Breakdown none, all;
  runBreakdown(p, r, &none);
  r.sites[0].pinned = 4;
  ASSERT_TRUE(runBreakdown(p, r, &all));
  EXPECT_DOUBLE_EQ(none.communicationNs, p.breakdown.communicationNs);
  EXPECT_DOUBLE_EQ(all.communicationNs, p.breakdown.communicationNs - 2e6);
  EXPECT_DOUBLE_EQ(all.kernelNs, p.breakdown.kernelNs);
  EXPECT_DOUBLE_EQ(all.totalNs, static_cast<double>(r.wallNs));
  EXPECT_DOUBLE_EQ(all.cpuSyncNs, all.totalNs - all.kernelNs - all.communicationNs);
}

TEST_F(ProfileStore, RunBreakdownsForTheSideBySidePlot) {
  auto db = open();
  AppProfile p = testing::sampleProfile();
  std::string error;
  int64_t id = 0;
  ASSERT_TRUE(storeProfile(*db, p, &id, &error)) << error;
  Breakdown opt = p.breakdown;
  opt.communicationNs = 1e6;
  ASSERT_TRUE(storeRunBreakdown(*db, id, {"optimized", opt}, &error)) << error;
  ASSERT_TRUE(storeRunBreakdown(*db, id, {"standard", p.breakdown}, &error)) << error;
  opt.communicationNs = 2e6;  // a later run replaces the earlier one of the same label
  ASSERT_TRUE(storeRunBreakdown(*db, id, {"optimized", opt}, &error)) << error;
  std::vector<BreakdownBar> bars;
  ASSERT_TRUE(loadRunBreakdowns(*db, id, &bars, &error)) << error;
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0].label, "standard");
  EXPECT_EQ(bars[1].label, "optimized");
  EXPECT_DOUBLE_EQ(bars[1].breakdown.communicationNs, 2e6);
}

TEST_F(ProfileStore, ForeignFileIsRefusedWithItsPath) {
  FILE* f = fopen(m_path.c_str(), "w");
  fputs("this is not a database at all, just text padded out to a page or so...........", f);
  fclose(f);
  chmod(m_path.c_str(), 0600);
  std::string error;
  auto db = Db::open(m_path, Db::Mode::ReadWriteCreate, &error);
  EXPECT_FALSE(db);
  EXPECT_NE(error.find(m_path), std::string::npos) << error;
}

}  // namespace
}  // namespace hetopt::analyzer
