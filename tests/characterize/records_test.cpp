// SPDX-License-Identifier: MIT
/** @file Characterizations in the DB: round trip, replacement by key, lookup by key, DBs that
 * older hetopts wrote. */
#include "characterize/records.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "characterize/decide.h"
#include "contracts/db_schema.h"
#include "tests/characterize/test_util.h"
#include "tests/store/db_describe.h"

namespace hetopt::characterize {
namespace {

using testing::TempDir;

CostFunction costFunction(std::initializer_list<Segment> segments, int points, double sizeMin,
                          double sizeMax, double rmsRelErr, double maxRelErr) {
  CostFunction f;
  for (const Segment& s : segments) f.segments[f.count++] = s;
  f.points = points;
  f.sizeMin = sizeMin;
  f.sizeMax = sizeMax;
  f.rmsRelErr = rmsRelErr;
  f.maxRelErr = maxRelErr;
  return f;
}

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
  const CostFunction f =
      costFunction({{0, 1000, 0.5}, {65536, 3000, 0.1}}, 11, 1024, 1 << 20, 0.02, 0.05);
  run.fits = {{Measure::H2D, PolicyKind::Standard, 2, f},
              {Measure::Alloc, PolicyKind::Locked, 1, f}};
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

/// A new DB in `tmp` holding `runs`, stored in order (their ids set); null after a failure.
std::unique_ptr<Db> dbWith(TempDir& tmp, std::initializer_list<CharacterizationRun*> runs,
                           const char* file = "h.db") {
  std::string error;
  auto db = Db::open(tmp.file(file), Db::Mode::ReadWriteCreate, &error);
  EXPECT_TRUE(db) << error;
  for (CharacterizationRun* run : runs) {
    if (db && !storeRun(*db, run, &error)) {
      ADD_FAILURE() << error;
      return nullptr;
    }
  }
  return db;
}

// A run with every kind of value the tables hold (NULLs for no limit and no bound, a size past
// INT64_MAX, each enum and state).
CharacterizationRun fixtureRun() {
  CharacterizationRun run;
  run.info = testing::ciRunInfo("gpu-old", "2025-01-02T03:04:05Z");
  run.info.deviceType = "GPU";
  run.info.quick = false;
  run.info.durationS = 812.25;
  run.info.memlockLimit = UINT64_MAX;
  run.info.lockBeyondLimit = true;
  run.policies = {
      {PolicyKind::Standard, PolicyAvailability::State::Available, "", 1ull << 30},
      {PolicyKind::Locked, PolicyAvailability::State::Partial, "fails at 1 GiB", 512ull << 20},
      {PolicyKind::OpenCL, PolicyAvailability::State::Available, "", 1ull << 30},
      {PolicyKind::Hybrid, PolicyAvailability::State::Unavailable, "no mlock", 0},
      {PolicyKind::Register, PolicyAvailability::State::Available, "", 1ull << 30}};
  auto sample = [](Measure m, PolicyKind p, int concurrency, uint64_t size,
                   std::vector<double> times) {
    Sample s;
    s.kind = m;
    s.policy = p;
    s.concurrency = concurrency;
    s.size = size;
    s.timesNs = std::move(times);
    s.summarize();
    return s;
  };
  run.samples = {
      sample(Measure::Alloc, PolicyKind::Locked, 1, 4096, {250, 260.5, 249}),
      sample(Measure::D2H, PolicyKind::Standard, 4, 1ull << 26, {5.5e6, 5.25e6, 6e6, 5.75e6}),
      sample(Measure::Free, PolicyKind::OpenCL, 1, (1ull << 63) + 3, {1e3}),
      sample(Measure::H2D, PolicyKind::Register, 2, 1 << 20, {90125, 90250})};
  const CostFunction three =
      costFunction({{0, 1500, 0.5}, {65536, 4000, 0.125}, {16777216, 9000, 0.0625}}, 21, 4096,
                   1 << 30, 0.03125, 0.25);
  const CostFunction one = costFunction({{0, 1500, 0.5}}, 5, 4096, 1 << 30, 0.03125, 0.25);
  run.fits = {{Measure::D2H, PolicyKind::Standard, 4, one},
              {Measure::H2D, PolicyKind::Register, 2, three}};
  Decision h2d;
  h2d.direction = Direction::H2D;
  h2d.sizeLo = 0;
  h2d.sizeHi = 65536;
  h2d.policy = PolicyKind::Standard;
  h2d.alloc = AllocMode::Plain;
  h2d.refSize = 32768;
  h2d.predictedNs = 16000;
  h2d.standardNs = 16000;
  h2d.reason = "standard is fastest";
  Decision d2h = h2d;
  d2h.direction = Direction::D2H;
  d2h.sizeLo = 65536;
  d2h.sizeHi = UINT64_MAX;
  d2h.policy = PolicyKind::Locked;
  d2h.alloc = AllocMode::Pool;
  d2h.predictedNs = 2500.5;
  d2h.reason = "pinned";
  Decision rt = d2h;
  rt.direction = Direction::RoundTrip;
  rt.policy = PolicyKind::Hybrid;
  rt.alloc = AllocMode::Direct;
  run.decisions = {h2d, d2h, rt};
  return run;
}

// `sqlite3 .dump` of a DB in which hetopt 0.1.0 (schema 6, before its characterization tables were
// made from contracts/db_schema.cpp, with hand-written SQL) stored fixtureRun(): the tables as
// that code created them and the rows as it wrote them.
constexpr const char* kOldCodeDb = R"SQL(
CREATE TABLE char_runs (
  id INTEGER PRIMARY KEY,
  platform_name TEXT NOT NULL, platform_version TEXT NOT NULL, device_name TEXT NOT NULL,
  driver_version TEXT NOT NULL, cpu_model TEXT NOT NULL, kernel TEXT NOT NULL,
  device_vendor TEXT NOT NULL, device_type TEXT NOT NULL, hostname TEXT NOT NULL,
  hetopt_version TEXT NOT NULL, created_utc TEXT NOT NULL, quick INTEGER NOT NULL,
  duration_s REAL NOT NULL, memlock_limit INTEGER, lock_beyond_limit INTEGER NOT NULL,
  UNIQUE (platform_name, platform_version, device_name, driver_version, cpu_model, kernel));
INSERT INTO char_runs VALUES(1,'Portable Computing Language','OpenCL 3.0 PoCL','gpu-old','3.1','AMD EPYC','6.1.0','AuthenticAMD','GPU','ci','0.1.0','2025-01-02T03:04:05Z',0,812.25000000000000003,NULL,1);
CREATE TABLE char_policies (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  policy TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL, max_size INTEGER NOT NULL,
  PRIMARY KEY (run_id, policy));
INSERT INTO char_policies VALUES(1,'standard','available','',1073741824);
INSERT INTO char_policies VALUES(1,'locked','partial','fails at 1 GiB',536870912);
INSERT INTO char_policies VALUES(1,'opencl','available','',1073741824);
INSERT INTO char_policies VALUES(1,'hybrid','unavailable','no mlock',0);
INSERT INTO char_policies VALUES(1,'register','available','',1073741824);
CREATE TABLE char_samples (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  measure TEXT NOT NULL, policy TEXT NOT NULL, concurrency INTEGER NOT NULL, size INTEGER NOT NULL,
  reps INTEGER NOT NULL, median_ns REAL NOT NULL, q1_ns REAL NOT NULL, q3_ns REAL NOT NULL,
  min_ns REAL NOT NULL, max_ns REAL NOT NULL, times_ns TEXT NOT NULL,
  PRIMARY KEY (run_id, measure, policy, concurrency, size));
INSERT INTO char_samples VALUES(1,'alloc','locked',1,4096,3,250.0,249.49999999999999998,255.25,249.0,260.5,'250 260 249');
INSERT INTO char_samples VALUES(1,'d2h','standard',4,67108864,4,5625000.0,5437500.0,5812500.0,5250000.0,6000000.0,'5500000 5250000 6000000 5750000');
INSERT INTO char_samples VALUES(1,'free','opencl',1,-9223372036854775805,1,1000.0,1000.0,1000.0,1000.0,1000.0,'1000');
INSERT INTO char_samples VALUES(1,'h2d','register',2,1048576,2,90187.500000000000001,90156.25,90218.750000000000003,90125.0,90250.0,'90125 90250');
CREATE TABLE char_fits (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  measure TEXT NOT NULL, policy TEXT NOT NULL, concurrency INTEGER NOT NULL,
  points INTEGER NOT NULL, rms_rel_err REAL NOT NULL, max_rel_err REAL NOT NULL,
  size_min REAL NOT NULL, size_max REAL NOT NULL,
  PRIMARY KEY (run_id, measure, policy, concurrency));
INSERT INTO char_fits VALUES(1,'d2h','standard',4,5,0.03125,0.25,4096.0,1073741824.0);
INSERT INTO char_fits VALUES(1,'h2d','register',2,21,0.03125,0.25,4096.0,1073741824.0);
CREATE TABLE char_fit_segments (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  measure TEXT NOT NULL, policy TEXT NOT NULL, concurrency INTEGER NOT NULL, idx INTEGER NOT NULL,
  size_lo REAL NOT NULL, latency_ns REAL NOT NULL, ns_per_byte REAL NOT NULL,
  PRIMARY KEY (run_id, measure, policy, concurrency, idx));
INSERT INTO char_fit_segments VALUES(1,'d2h','standard',4,0,0.0,1500.0,0.5);
INSERT INTO char_fit_segments VALUES(1,'h2d','register',2,0,0.0,1500.0,0.5);
INSERT INTO char_fit_segments VALUES(1,'h2d','register',2,1,65536.0,4000.0,0.125);
INSERT INTO char_fit_segments VALUES(1,'h2d','register',2,2,16777216.0,9000.0,0.0625);
CREATE TABLE char_decisions (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  direction TEXT NOT NULL, size_lo INTEGER NOT NULL, size_hi INTEGER, policy TEXT NOT NULL,
  alloc TEXT NOT NULL, ref_size INTEGER NOT NULL, predicted_ns REAL NOT NULL,
  standard_ns REAL NOT NULL, reason TEXT NOT NULL,
  PRIMARY KEY (run_id, direction, size_lo));
INSERT INTO char_decisions VALUES(1,'h2d',0,65536,'standard','plain',32768,16000.0,16000.0,'standard is fastest');
INSERT INTO char_decisions VALUES(1,'d2h',65536,NULL,'locked','pool',32768,2500.5,16000.0,'pinned');
INSERT INTO char_decisions VALUES(1,'roundtrip',65536,NULL,'hybrid','direct',32768,2500.5,16000.0,'pinned');
)SQL";

std::string describeRun(const CharacterizationRun& run) {
  char buf[64];
  auto num = [&](double v) {
    snprintf(buf, sizeof buf, " %.17g", v);
    return std::string(buf);
  };
  const RunInfo& i = run.info;
  std::string out = "run " + std::to_string(run.id) + ": " + i.key.platformName + "|" +
                    i.key.platformVersion + "|" + i.key.deviceName + "|" + i.key.driverVersion +
                    "|" + i.key.cpuModel + "|" + i.key.kernel + "|" + i.deviceVendor + "|" +
                    i.deviceType + "|" + i.hostname + "|" + i.hetoptVersion + "|" + i.createdUtc +
                    "|" + std::to_string(i.quick) + num(i.durationS) + " " +
                    std::to_string(i.memlockLimit) + " " + std::to_string(i.lockBeyondLimit) + "\n";
  for (const PolicyAvailability& a : run.policies)
    out += std::string("policy ") + policyName(a.policy) + " " + availabilityName(a.state) + " '" +
           a.reason + "' " + std::to_string(a.maxSize) + "\n";
  for (const Sample& s : run.samples) {
    out += std::string("sample ") + measureName(s.kind) + " " + policyName(s.policy) + " " +
           std::to_string(s.concurrency) + " " + std::to_string(s.size) + num(s.medianNs) +
           num(s.q1Ns) + num(s.q3Ns) + num(s.minNs) + num(s.maxNs) + " times";
    for (double t : s.timesNs) out += num(t);
    out += "\n";
  }
  for (const Fit& f : run.fits) {
    out += std::string("fit ") + measureName(f.kind) + " " + policyName(f.policy) + " " +
           std::to_string(f.concurrency) + " " + std::to_string(f.fn.points) + num(f.fn.rmsRelErr) +
           num(f.fn.maxRelErr) + num(f.fn.sizeMin) + num(f.fn.sizeMax);
    for (int k = 0; k < f.fn.count; ++k)
      out += " [" + num(f.fn.segments[k].sizeLo) + num(f.fn.segments[k].latencyNs) +
             num(f.fn.segments[k].nsPerByte) + "]";
    out += "\n";
  }
  for (const Decision& d : run.decisions)
    out += std::string("decision ") + directionName(d.direction) + " " + std::to_string(d.sizeLo) +
           " " + std::to_string(d.sizeHi) + " " + policyName(d.policy) + " " +
           allocModeName(d.alloc) + " " + std::to_string(d.refSize) + num(d.predictedNs) +
           num(d.standardNs) + " '" + d.reason + "'\n";
  return out;
}

// A DB that the hand-written SQL of older hetopts made is read as it was written once upgraded in
// place, and the tables made now are the same tables, holding the same rows for the same run.
TEST(Records, ADbOfTheOldCodeReadsTheSameAndIsWrittenTheSame) {
  TempDir tmp;
  std::string error;
  auto old = Db::open(tmp.file("old.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(old) << error;
  ASSERT_TRUE(old->exec(
      std::string(kOldCodeDb) + "UPDATE hetopt_meta SET value = '6' WHERE key = 'schema_version';",
      &error))
      << error;
  old.reset();
  old = Db::open(tmp.file("old.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(old) << error;
  CharacterizationRun fromOld;
  bool found = false;
  ASSERT_TRUE(loadRun(*old, fixtureRun().info.key, &fromOld, &found, &error)) << error;
  ASSERT_TRUE(found);
  EXPECT_EQ(fromOld.info.memlockLimit, UINT64_MAX);  // NULL: unlimited
  EXPECT_EQ(fromOld.decisions.back().sizeHi, UINT64_MAX);
  ASSERT_EQ(fromOld.samples.size(), 4u);
  EXPECT_EQ(fromOld.samples[2].size, (1ull << 63) + 3);  // bit for bit through SQLite's INTEGER
  EXPECT_EQ(fromOld.fits[1].fn.count, 3);

  CharacterizationRun run = fixtureRun();
  auto now = dbWith(tmp, {&run}, "new.db");
  ASSERT_TRUE(now);
  CharacterizationRun fromNew;
  ASSERT_TRUE(loadRun(*now, run.info.key, &fromNew, &found, &error)) << error;
  ASSERT_TRUE(found);
  EXPECT_EQ(describeRun(fromOld), describeRun(fromNew));
  const std::string tables = hetopt::testing::describeTables(*old, charTables(), true);
  EXPECT_NE(tables.find(
                "char_decisions foreign_key_list: 0 0 char_runs run_id id NO ACTION CASCADE NONE"),
            std::string::npos)
      << tables;
  EXPECT_EQ(tables, hetopt::testing::describeTables(*now, charTables(), true));

  // The new code stores into the old tables: the run with the same key is replaced.
  run.info.durationS = 3;
  ASSERT_TRUE(storeRun(*old, &run, &error)) << error;
  std::vector<CharacterizationRun> all;
  ASSERT_TRUE(loadAllRuns(*old, &all, &error)) << error;
  ASSERT_EQ(all.size(), 1u);
  EXPECT_DOUBLE_EQ(all[0].info.durationS, 3);
  EXPECT_EQ(all[0].samples.size(), 4u);
}

TEST(Records, RoundTripKeepsEverything) {
  TempDir tmp;
  std::string error;
  CharacterizationRun run = makeRun("cpu-a");
  auto db = dbWith(tmp, {&run});
  ASSERT_TRUE(db);
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
      if (got.kind != want.kind || got.policy != want.policy ||
          got.concurrency != want.concurrency || got.size != want.size)
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
  CharacterizationRun a = makeRun("cpu-a"), b = makeRun("cpu-b");
  auto db = dbWith(tmp, {&a, &b});
  ASSERT_TRUE(db);
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
  CharacterizationRun run = makeRun("cpu-a");
  auto db = dbWith(tmp, {&run});
  ASSERT_TRUE(db);
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
  auto db = dbWith(tmp, {});
  ASSERT_TRUE(db);
  std::vector<CharacterizationRun> all;
  ASSERT_TRUE(loadAllRuns(*db, &all, &error)) << error;  // no tables yet
  EXPECT_TRUE(all.empty());
  CharacterizationRun run = makeRun("cpu-a");
  ASSERT_TRUE(storeRun(*db, &run, &error)) << error;
  ASSERT_TRUE(
      db->exec("UPDATE char_policies SET policy = 'teleport' WHERE policy = 'locked'", &error));
  EXPECT_FALSE(loadAllRuns(*db, &all, &error));
  EXPECT_NE(error.find("'teleport' in char_policies.policy"), std::string::npos) << error;
}

}  // namespace
}  // namespace hetopt::characterize
