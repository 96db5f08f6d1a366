// SPDX-License-Identifier: MIT
/** @file Characterizations in the DB: round trip, replacement by key, lookup by key. */
#include "characterize/records.h"

#include <gtest/gtest.h>

#include "characterize/decide.h"
#include "tests/characterize/test_util.h"

namespace hetopt::characterize {
namespace {

using testing::TempDir;

CharacterizationRun makeRun(const std::string& device) {
  CharacterizationRun run;
  run.info = testing::ciRunInfo(device, "2026-11-03T10:00:00Z");
  run.info.lockBeyondLimit = false;
  run.policies = {{PolicyKind::Standard, PolicyAvailability::State::Available, "", 16 << 20},
                  {PolicyKind::Locked, PolicyAvailability::State::Partial,
                   "fails at 16 MiB: mlock of 16.0 MiB exceeds RLIMIT_MEMLOCK 8.0 MiB", 8 << 20},
                  {PolicyKind::Hybrid, PolicyAvailability::State::Unavailable, "no mlock", 0}};
  for (Measure m : {Measure::Alloc, Measure::H2D, Measure::D2H}) {
    for (int e = 10; e <= 20; ++e) {
      Sample s;
      s.kind = m;
      s.policy = PolicyKind::Standard;
      s.concurrency = m == Measure::Alloc ? 1 : 2;
      s.size = uint64_t{1} << e;
      s.timesNs = {1000.0 + e, 1100.0 + e, 990.0 + e, 1234567.0};
      s.summarize();
      run.samples.push_back(s);
    }
  }
  CostFunction f;
  f.count = 2;
  f.segments[0] = {0, 1000, 0.5};
  f.segments[1] = {65536, 3000, 0.1};
  f.rmsRelErr = 0.02;
  f.maxRelErr = 0.05;
  f.points = 11;
  f.sizeMin = 1024;
  f.sizeMax = 1 << 20;
  run.fits = {{Measure::H2D, PolicyKind::Standard, 2, f}, {Measure::Alloc, PolicyKind::Locked, 1, f}};
  Decision d;
  d.direction = Direction::RoundTrip;
  d.sizeLo = 1 << 20;
  d.sizeHi = UINT64_MAX;
  d.policy = PolicyKind::Register;
  d.alloc = AllocMode::Direct;
  d.predictedNs = 100;
  d.standardNs = 700;
  d.refSize = 1 << 21;
  d.reason = "fastest";
  Decision small = d;
  small.direction = Direction::H2D;
  small.sizeLo = 0;
  small.sizeHi = 1 << 20;
  small.policy = PolicyKind::Standard;
  small.alloc = AllocMode::Plain;
  run.decisions = {small, d};
  return run;
}

TEST(Records, RoundTripKeepsEverything) {
  TempDir tmp;
  std::string error;
  auto db = Db::open(tmp.file("h.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(db) << error;
  CharacterizationRun run = makeRun("cpu-a");
  ASSERT_TRUE(storeRun(*db, &run, &error)) << error;
  EXPECT_GT(run.id, 0);

  CharacterizationRun back;
  bool found = false;
  ASSERT_TRUE(loadRun(*db, run.info.key, &back, &found, &error)) << error;
  ASSERT_TRUE(found);
  EXPECT_EQ(back.id, run.id);
  EXPECT_EQ(back.info.key, run.info.key);
  EXPECT_EQ(back.info.deviceType, "CPU");
  EXPECT_EQ(back.info.hostname, "ci");
  EXPECT_EQ(back.info.createdUtc, run.info.createdUtc);
  EXPECT_TRUE(back.info.quick);
  EXPECT_DOUBLE_EQ(back.info.durationS, 4.5);
  EXPECT_EQ(back.info.memlockLimit, 8u << 20);
  ASSERT_EQ(back.policies.size(), 3u);
  const PolicyAvailability* locked = back.findPolicy(PolicyKind::Locked);
  ASSERT_NE(locked, nullptr);
  EXPECT_EQ(locked->state, PolicyAvailability::State::Partial);
  EXPECT_EQ(locked->maxSize, 8u << 20);
  EXPECT_EQ(locked->reason, run.policies[1].reason);
  EXPECT_EQ(back.findPolicy(PolicyKind::Hybrid)->state, PolicyAvailability::State::Unavailable);

  ASSERT_EQ(back.samples.size(), run.samples.size());
  for (const Sample& want : run.samples) {
    bool match = false;
    for (const Sample& got : back.samples) {
      if (got.kind != want.kind || got.policy != want.policy || got.concurrency != want.concurrency ||
          got.size != want.size)
        continue;
      match = true;
      EXPECT_EQ(got.timesNs, want.timesNs);  // every repetition, in order
      EXPECT_DOUBLE_EQ(got.medianNs, want.medianNs);
      EXPECT_DOUBLE_EQ(got.q1Ns, want.q1Ns);
      EXPECT_DOUBLE_EQ(got.q3Ns, want.q3Ns);
      EXPECT_DOUBLE_EQ(got.maxNs, 1234567.0);
    }
    EXPECT_TRUE(match) << measureName(want.kind) << " " << want.size;
  }

  ASSERT_EQ(back.fits.size(), 2u);
  const Fit* f = back.findFit(Measure::H2D, PolicyKind::Standard, 2);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fn.count, 2);
  EXPECT_DOUBLE_EQ(f->fn.segments[1].sizeLo, 65536);
  EXPECT_DOUBLE_EQ(f->fn.segments[1].nsPerByte, 0.1);
  EXPECT_DOUBLE_EQ(f->fn.rmsRelErr, 0.02);
  EXPECT_DOUBLE_EQ(f->fn.eval(1 << 20), run.fits[0].fn.eval(1 << 20));

  ASSERT_EQ(back.decisions.size(), 2u);
  EXPECT_EQ(back.decisions[0].direction, Direction::H2D);  // h2d, d2h, roundtrip order
  EXPECT_EQ(back.decisions[1].sizeHi, UINT64_MAX);
  EXPECT_EQ(back.decisions[1].policy, PolicyKind::Register);
  EXPECT_EQ(back.decisions[1].alloc, AllocMode::Direct);
  EXPECT_DOUBLE_EQ(back.decisions[1].speedup(), 7.0);
  EXPECT_EQ(formatDecisionTable(back), formatDecisionTable(run));
}

TEST(Records, SameKeyReplacesOtherKeysStay) {
  TempDir tmp;
  std::string error;
  auto db = Db::open(tmp.file("h.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(db) << error;
  CharacterizationRun a = makeRun("cpu-a"), b = makeRun("cpu-b");
  ASSERT_TRUE(storeRun(*db, &a, &error)) << error;
  ASSERT_TRUE(storeRun(*db, &b, &error)) << error;
  CharacterizationRun a2 = makeRun("cpu-a");
  a2.info.durationS = 9;
  a2.samples.resize(3);
  ASSERT_TRUE(storeRun(*db, &a2, &error)) << error;

  std::vector<CharacterizationRun> all;
  ASSERT_TRUE(loadAllRuns(*db, &all, &error)) << error;
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].info.key.deviceName, "cpu-b");
  EXPECT_EQ(all[1].info.key.deviceName, "cpu-a");
  EXPECT_DOUBLE_EQ(all[1].info.durationS, 9);
  EXPECT_EQ(all[1].samples.size(), 3u);  // the old run's rows went with it
  DbStatement q(*db, "SELECT count(*) FROM char_samples");
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnInt(0), static_cast<int64_t>(3 + b.samples.size()));
}

TEST(Records, KeyChangeMeansNotFound) {
  TempDir tmp;
  std::string error;
  auto db = Db::open(tmp.file("h.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(db) << error;
  CharacterizationRun run = makeRun("cpu-a");
  ASSERT_TRUE(storeRun(*db, &run, &error)) << error;
  for (auto change : {+[](PlatformKey& k) { k.driverVersion = "3.2"; },
                      +[](PlatformKey& k) { k.kernel = "6.8.0"; },
                      +[](PlatformKey& k) { k.cpuModel = "Intel Xeon"; }}) {
    PlatformKey key = run.info.key;
    change(key);
    CharacterizationRun out;
    bool found = true;
    ASSERT_TRUE(loadRun(*db, key, &out, &found, &error)) << error;
    EXPECT_FALSE(found);
  }
}

TEST(Records, EmptyDbHasNoRunsAndDamagedRowsAreReported) {
  TempDir tmp;
  std::string error;
  auto db = Db::open(tmp.file("h.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(db) << error;
  std::vector<CharacterizationRun> all;
  ASSERT_TRUE(loadAllRuns(*db, &all, &error)) << error;  // no tables yet
  EXPECT_TRUE(all.empty());
  CharacterizationRun run = makeRun("cpu-a");
  ASSERT_TRUE(storeRun(*db, &run, &error)) << error;
  ASSERT_TRUE(db->exec("UPDATE char_policies SET policy = 'teleport' WHERE policy = 'locked'", &error));
  EXPECT_FALSE(loadAllRuns(*db, &all, &error));
  EXPECT_NE(error.find("teleport"), std::string::npos) << error;
}

}  // namespace
}  // namespace hetopt::characterize
