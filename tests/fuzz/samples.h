// SPDX-License-Identifier: MIT
/**
 * @file Valid data made by hetopt's own code, for the fuzz targets' seeds: a characterization
 * (synthetic measurements through the real fitting and decision code) and the analyzer tests'
 * sample profile, written into a DB by the real writers.
 */
#pragma once
#include <unistd.h>

#include <string>

#include "analyzer/profile_store.h"
#include "characterize/decide.h"
#include "characterize/records.h"
#include "store/db.h"
#ifndef HETOPT_PYTHON3
#define HETOPT_PYTHON3 "python3"  // test_util.h's JSON check, unused here
#endif
#include "tests/analyzer/test_util.h"
#include "tests/characterize/test_util.h"

namespace hetopt::fuzz {

/// A device where pinned memory (hybrid, opencl) transfers 4x faster than malloc memory above
/// 64 KiB and costs allocation time: the decision table then holds pool and plain rows.
inline characterize::CharacterizationRun sampleRun() {
  using namespace characterize;
  CharacterizationRun run;
  run.info = characterize::testing::ciRunInfo("cpu-haswell", "2026-11-23T10:00:00Z");
  for (PolicyKind p : {PolicyKind::Standard, PolicyKind::OpenCL, PolicyKind::Hybrid})
    run.policies.push_back({p, PolicyAvailability::State::Available, "", 64 << 20});
  run.policies.push_back(
      {PolicyKind::Locked, PolicyAvailability::State::Unavailable, "no mlock", 0});
  for (PolicyKind p : {PolicyKind::Standard, PolicyKind::OpenCL, PolicyKind::Hybrid}) {
    const double perByte = p == PolicyKind::Standard ? 0.4 : 0.1;
    for (Measure m : {Measure::Alloc, Measure::Free, Measure::H2D, Measure::D2H}) {
      for (int e = 10; e <= 26; e += 2) {
        Sample s;
        s.kind = m;
        s.policy = p;
        s.size = uint64_t{1} << e;
        const double bytes = static_cast<double>(s.size);
        const double t = m == Measure::Alloc
                             ? (p == PolicyKind::Standard ? 200 : 5000 + bytes * 0.3)
                         : m == Measure::Free ? 100
                                              : 3000 + bytes * perByte;
        s.timesNs = {t, t * 1.02, t * 0.99, t * 1.01};
        s.summarize();
        run.samples.push_back(s);
      }
    }
  }
  fitSamples(&run);
  run.decisions = decide(run);
  return run;
}

/// The sample profile, made for the sample run's device.
inline analyzer::AppProfile sampleProfile() {
  analyzer::AppProfile p = analyzer::testing::sampleProfile();
  p.device = "Portable Computing Language / cpu-haswell";
  return p;
}

/// Writes a DB holding the sample run and profile with hetopt's own writers. False with *error.
inline bool writeSampleDb(const std::string& path, std::string* error) {
  unlink(path.c_str());  // written anew by this hetopt's writers, never upgraded from an old one
  std::unique_ptr<Db> db = Db::open(path, Db::Mode::ReadWriteCreate, error);
  if (!db) return false;
  characterize::CharacterizationRun run = sampleRun();
  analyzer::AppProfile profile = sampleProfile();
  int64_t id = 0;
  if (!characterize::storeRun(*db, &run, error) || !analyzer::ensureProfileTables(*db, error) ||
      !analyzer::storeProfile(*db, profile, &id, error))
    return false;
  analyzer::BreakdownBar bar;
  bar.label = "optimized";
  bar.breakdown = profile.breakdown;
  return analyzer::storeRunBreakdown(*db, id, bar, error);
}

}  // namespace hetopt::fuzz
