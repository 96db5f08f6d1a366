// SPDX-License-Identifier: MIT
/** @file Predicted gains from a characterization stored through the characterize records. */
#include "analyzer/gain.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "analyzer/analyze_file.h"
#include "analyzer/profile_store.h"
#include "analyzer/warmup.h"
#include "characterize/records.h"
#include "common/program_identity.h"
#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

using characterize::CharacterizationRun;
using characterize::Decision;
using characterize::Direction;
using characterize::Fit;
using characterize::Measure;

// latency + size * nsPerByte, one regime.
Fit linear(Measure m, PolicyKind p, double latencyNs, double nsPerByte) {
  Fit f;
  f.kind = m;
  f.policy = p;
  f.fn.count = 1;
  f.fn.segments[0] = {0, latencyNs, nsPerByte};
  f.fn.points = 10;
  f.fn.sizeMin = 1024;
  f.fn.sizeMax = 256 << 20;
  return f;
}

Decision decision(Direction d, PolicyKind p, characterize::AllocMode mode) {
  Decision x;
  x.direction = d;
  x.sizeLo = 0;
  x.sizeHi = UINT64_MAX;
  x.policy = p;
  x.alloc = mode;
  x.refSize = 1 << 20;
  x.reason = "test";
  return x;
}

class Gain : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = testing::makeTempDir();
    std::string error;
    m_db = Db::open(m_dir + "/hetopt.db", Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(m_db) << error;
  }
  void TearDown() override {
    m_db.reset();
    system(("rm -rf '" + m_dir + "'").c_str());
  }
  /// A device whose pinned memory moves data 5x faster than pageable memory.
  void store(characterize::AllocMode mode, PolicyKind chosen = PolicyKind::Hybrid) {
    CharacterizationRun run;
    run.info.key = {"FakeCL", "FakeCL 3.0", "Fake GPU 9000", "1.0", "Fake CPU", "6.1"};
    run.info.deviceType = "GPU";
    run.info.createdUtc = "2026-11-20T00:00:00Z";
    run.info.hetoptVersion = "test";
    run.info.hostname = "test";
    for (Measure m : {Measure::H2D, Measure::D2H}) {
      run.fits.push_back(linear(m, PolicyKind::Standard, 10000, 0.1));
      run.fits.push_back(linear(m, PolicyKind::Hybrid, 10000, 0.02));
    }
    run.fits.push_back(linear(Measure::Alloc, PolicyKind::Standard, 1000, 0));
    run.fits.push_back(linear(Measure::Alloc, PolicyKind::Hybrid, 1000, 0.5));
    for (Direction d : {Direction::H2D, Direction::D2H, Direction::RoundTrip})
      run.decisions.push_back(decision(d, chosen, mode));
    std::string error;
    ASSERT_TRUE(characterize::storeRun(*m_db, &run, &error)) << error;
  }
  CandidateSite site() {
    CandidateSite c;
    c.allocations = 2;
    c.typicalAllocBytes = 1 << 20;
    c.peakLiveBytes = 2 << 20;
    c.h2d.add(1 << 20, 10, 0);
    c.h2d.finish();
    c.d2h.add(1 << 20, 10, 0);
    c.d2h.finish();
    return c;
  }
  std::string m_dir;
  std::unique_ptr<Db> m_db;
};

TEST_F(Gain, PooledPolicySavesTheTransferTimeDifferenceLessItsPinning) {
  store(characterize::AllocMode::Pool);
  std::string why;
  auto model = loadGainModel(*m_db, "Fake GPU 9000", &why);
  ASSERT_TRUE(model) << why;
  GainPrediction g;
  model->predict(site(), &g);
  ASSERT_TRUE(g.known) << g.note;
  EXPECT_EQ(g.policy, "hybrid");
  EXPECT_EQ(g.allocMode, "pool");
  const double mib = 1 << 20;
  EXPECT_DOUBLE_EQ(g.standardNs, 20 * (10000 + 0.1 * mib));
  // The pool pins the site's peak live bytes (2 MiB) once.
  EXPECT_DOUBLE_EQ(g.optimizedNs, 20 * (10000 + 0.02 * mib) + 0.5 * 2 * mib);
  EXPECT_NE(g.note.find("Fake GPU 9000"), std::string::npos) << g.note;
}

// A pageable copy's device time leaves out the driver's staging copy on the host, which the
// standard curves (host time of blocking transfers) include; first-touch faults make the traced
// time exceed the warm curves. The baseline is whichever is larger.
TEST_F(Gain, TheBaselineIsTheLargerOfTracedDeviceTimeAndTheStandardCurves) {
  store(characterize::AllocMode::Pool);
  std::string why;
  auto model = loadGainModel(*m_db, "Fake GPU 9000", &why);
  ASSERT_TRUE(model) << why;
  const double mib = 1 << 20;
  const double curves = 20 * (10000 + 0.1 * mib);
  for (double traced : {curves / 5, curves * 3}) {
    CandidateSite s = site();
    s.h2d = TransferStats{}, s.d2h = TransferStats{};
    s.h2d.add(1 << 20, 10, traced / 2);
    s.h2d.finish();
    s.d2h.add(1 << 20, 10, traced / 2);
    s.d2h.finish();
    GainPrediction g;
    model->predict(s, &g);
    ASSERT_TRUE(g.known) << g.note;
    EXPECT_DOUBLE_EQ(g.standardNs, std::max(traced, curves)) << "traced " << traced;
    EXPECT_EQ(g.measured, traced > curves) << "traced " << traced;
    EXPECT_DOUBLE_EQ(g.tracedNs, traced);
  }
}

TEST_F(Gain, ASiteThatCrossesOnceDoesNotRepayItsPinning) {
  store(characterize::AllocMode::Pool);
  std::string why;
  auto model = loadGainModel(*m_db, "Fake GPU 9000", &why);
  ASSERT_TRUE(model) << why;
  CandidateSite once;
  once.allocations = 1;
  once.typicalAllocBytes = once.peakLiveBytes = 64 << 20;
  once.h2d.add(64 << 20, 1, 0);  // e.g. a CL_MEM_COPY_HOST_PTR buffer made from it
  once.h2d.finish();
  GainPrediction g;
  model->predict(once, &g);
  ASSERT_TRUE(g.known) << g.note;
  EXPECT_LT(g.savingNs(), 0) << "saves " << g.savingNs() << " ns";
}

TEST_F(Gain, RegisterIsServedFromAHybridPoolUntilInPlaceRegistrationExists) {
  store(characterize::AllocMode::Direct, PolicyKind::Register);
  std::string why;
  auto model = loadGainModel(*m_db, "Fake GPU 9000", &why);
  ASSERT_TRUE(model) << why;
  GainPrediction g;
  model->predict(site(), &g);
  ASSERT_TRUE(g.known) << g.note;
  EXPECT_EQ(g.policy, "hybrid");
  EXPECT_EQ(g.allocMode, "pool");
  const double mib = 1 << 20;
  EXPECT_DOUBLE_EQ(g.optimizedNs, 20 * (10000 + 0.02 * mib) + 0.5 * 2 * mib);
}

// In-place registration: the register curves for the transfers plus one registration of the
// range, against pageable memory; unknown without register curves.
TEST_F(Gain, RegistrationOfUntrackedMemoryUsesTheRegisterCurves) {
  std::string why;
  UntrackedMemory u;
  u.kind = UntrackedMemory::Kind::Static;
  u.moduleKey = 1;
  u.regionBytes = 4 << 20;
  u.h2d.add(4 << 20, 10, 0);
  u.h2d.finish();
  store(characterize::AllocMode::Pool);  // no register curves
  {
    auto model = loadGainModel(*m_db, "Fake GPU 9000", &why);
    ASSERT_TRUE(model) << why;
    GainPrediction g;
    model->predictRegistration(u, &g);
    EXPECT_FALSE(g.known);
    EXPECT_NE(g.note.find("register curves"), std::string::npos) << g.note;
  }
  CharacterizationRun run;
  std::string error;
  std::vector<CharacterizationRun> runs;
  ASSERT_TRUE(characterize::loadAllRuns(*m_db, &runs, &error)) << error;
  ASSERT_EQ(runs.size(), 1u);
  run = runs[0];
  run.fits.push_back(linear(Measure::H2D, PolicyKind::Register, 10000, 0.02));
  run.fits.push_back(linear(Measure::Alloc, PolicyKind::Register, 50000, 0.1));
  ASSERT_TRUE(characterize::storeRun(*m_db, &run, &error)) << error;
  auto model = loadGainModel(*m_db, "Fake GPU 9000", &why);
  ASSERT_TRUE(model) << why;
  GainPrediction g;
  model->predictRegistration(u, &g);
  ASSERT_TRUE(g.known) << g.note;
  EXPECT_EQ(g.policy, "register");
  const double mib = 1 << 20;
  EXPECT_DOUBLE_EQ(g.standardNs, 10 * (10000 + 0.1 * 4 * mib));
  EXPECT_DOUBLE_EQ(g.optimizedNs, 10 * (10000 + 0.02 * 4 * mib) + 50000 + 0.1 * 4 * mib);
  EXPECT_GT(g.savingNs(), 0);
  // One transfer does not repay registering 4 MiB.
  UntrackedMemory once = u;
  once.h2d = TransferStats{};
  once.h2d.add(4 << 20, 1, 0);
  once.h2d.finish();
  model->predictRegistration(once, &g);
  ASSERT_TRUE(g.known);
  EXPECT_LT(g.savingNs(), 0);
}

TEST_F(Gain, DirectAllocationIsChargedPerAllocation) {
  store(characterize::AllocMode::Direct);
  std::string why;
  auto model = loadGainModel(*m_db, "fake gpu 9000", &why);  // names match case-insensitively
  ASSERT_TRUE(model) << why;
  GainPrediction g;
  model->predict(site(), &g);
  ASSERT_TRUE(g.known) << g.note;
  const double mib = 1 << 20;
  EXPECT_DOUBLE_EQ(g.optimizedNs, 20 * (10000 + 0.02 * mib) + 2 * (0.5 * mib));
}

// A profile stored before the device was characterized: `analyze --profile` prices it with the
// curves there are now, and no longer says to run `hetopt characterize`.
TEST_F(Gain, AStoredProfileIsPricedWithTheCurvesOfNow) {
  AppProfile p;
  std::string error;
  ASSERT_TRUE(programIdentity("/proc/self/exe", &p.program, &error)) << error;
  p.device = "Fake GPU 9000";
  p.candidates = {site()};
  p.candidates[0].siteKey = 0x77;
  p.candidates[0].gain.note = "no characterization for Fake GPU 9000; run `hetopt characterize`";
  ASSERT_TRUE(storeProfile(*m_db, p, nullptr, &error)) << error;
  AnalyzeRequest req;
  req.dbPath = m_dir + "/hetopt.db";
  auto report = [&] {
    const std::string path = m_dir + "/report.txt";
    FILE* out = fopen(path.c_str(), "w");
    EXPECT_EQ(showStoredProfile("/proc/self/exe", req, out), 0);
    fclose(out);
    return testing::readFile(path);
  };
  std::string before = report();
  EXPECT_NE(before.find("hetopt characterize"), std::string::npos) << before;
  store(characterize::AllocMode::Pool);
  std::string after = report();
  EXPECT_EQ(after.find("no characterization"), std::string::npos) << after;
  EXPECT_NE(after.find("saves"), std::string::npos) << after;
}

// `hetopt trace` opens the DB and reads its curves while the program runs (AnalysisWarmup): what
// it read prices a site as the curves read after the run do, for every process of the run, and
// the DB it opened stores the profile. A DB that does not exist yet is left to the analysis.
TEST_F(Gain, TheDbOpenedAheadPricesAsTheDbOpenedAfter) {
  store(characterize::AllocMode::Pool);
  const std::string path = m_dir + "/hetopt.db";
  std::string why;
  auto after = loadGainModel(*m_db, "Fake GPU 9000", &why);
  ASSERT_TRUE(after) << why;
  AnalysisWarmup warmup(path);
  const OpenedDb* ahead = warmup.opened();
  ASSERT_TRUE(ahead && ahead->db && ahead->runsRead) << (ahead ? ahead->error : "none");
  GainPrediction want, got;
  after->predict(site(), &want);
  for (int process = 0; process < 2; ++process) {
    auto model = gainModelFor(*ahead, "Fake GPU 9000", &why);
    ASSERT_TRUE(model) << why;
    model->predict(site(), &got);
    EXPECT_EQ(got.policy, want.policy);
    EXPECT_EQ(got.allocMode, want.allocMode);
    EXPECT_DOUBLE_EQ(got.standardNs, want.standardNs);
    EXPECT_DOUBLE_EQ(got.optimizedNs, want.optimizedNs);
    EXPECT_EQ(got.note, want.note);
  }
  EXPECT_FALSE(gainModelFor(*ahead, "pthread-skylake", &why));
  EXPECT_NE(why.find("pthread-skylake"), std::string::npos) << why;
  AppProfile p;
  std::string error;
  ASSERT_TRUE(programIdentity("/proc/self/exe", &p.program, &error)) << error;
  p.device = "Fake GPU 9000";
  EXPECT_TRUE(storeProfile(*ahead->db, p, nullptr, &error)) << error;

  const std::string missing = m_dir + "/none/hetopt.db";
  AnalysisWarmup none(missing);
  EXPECT_EQ(none.opened(), nullptr);
  EXPECT_NE(access(missing.c_str(), F_OK), 0) << "the warm-up created the DB";
}

TEST_F(Gain, OtherDeviceOrEmptyDbSaysWhatToRun) {
  std::string why;
  EXPECT_FALSE(loadGainModel(*m_db, "Fake GPU 9000", &why));
  EXPECT_NE(why.find("hetopt characterize"), std::string::npos) << why;
  store(characterize::AllocMode::Pool);
  EXPECT_FALSE(loadGainModel(*m_db, "pthread-skylake", &why));
  EXPECT_NE(why.find("pthread-skylake"), std::string::npos) << why;
}

}  // namespace
}  // namespace hetopt::analyzer
