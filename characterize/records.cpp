// SPDX-License-Identifier: MIT
/** @file Storing and loading characterizations; see records.h and docs/DB.md. */
#include "characterize/records.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace hetopt::characterize {
namespace {

constexpr const char* kTables = R"SQL(
CREATE TABLE IF NOT EXISTS char_runs (
  id INTEGER PRIMARY KEY,
  platform_name TEXT NOT NULL, platform_version TEXT NOT NULL, device_name TEXT NOT NULL,
  driver_version TEXT NOT NULL, cpu_model TEXT NOT NULL, kernel TEXT NOT NULL,
  device_vendor TEXT NOT NULL, device_type TEXT NOT NULL, hostname TEXT NOT NULL,
  hetopt_version TEXT NOT NULL, created_utc TEXT NOT NULL, quick INTEGER NOT NULL,
  duration_s REAL NOT NULL, memlock_limit INTEGER, lock_beyond_limit INTEGER NOT NULL,
  UNIQUE (platform_name, platform_version, device_name, driver_version, cpu_model, kernel));
CREATE TABLE IF NOT EXISTS char_policies (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  policy TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL, max_size INTEGER NOT NULL,
  PRIMARY KEY (run_id, policy));
CREATE TABLE IF NOT EXISTS char_samples (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  measure TEXT NOT NULL, policy TEXT NOT NULL, concurrency INTEGER NOT NULL, size INTEGER NOT NULL,
  reps INTEGER NOT NULL, median_ns REAL NOT NULL, q1_ns REAL NOT NULL, q3_ns REAL NOT NULL,
  min_ns REAL NOT NULL, max_ns REAL NOT NULL, times_ns TEXT NOT NULL,
  PRIMARY KEY (run_id, measure, policy, concurrency, size));
CREATE TABLE IF NOT EXISTS char_fits (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  measure TEXT NOT NULL, policy TEXT NOT NULL, concurrency INTEGER NOT NULL,
  points INTEGER NOT NULL, rms_rel_err REAL NOT NULL, max_rel_err REAL NOT NULL,
  size_min REAL NOT NULL, size_max REAL NOT NULL,
  PRIMARY KEY (run_id, measure, policy, concurrency));
CREATE TABLE IF NOT EXISTS char_fit_segments (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  measure TEXT NOT NULL, policy TEXT NOT NULL, concurrency INTEGER NOT NULL, idx INTEGER NOT NULL,
  size_lo REAL NOT NULL, latency_ns REAL NOT NULL, ns_per_byte REAL NOT NULL,
  PRIMARY KEY (run_id, measure, policy, concurrency, idx));
CREATE TABLE IF NOT EXISTS char_decisions (
  run_id INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE,
  direction TEXT NOT NULL, size_lo INTEGER NOT NULL, size_hi INTEGER, policy TEXT NOT NULL,
  alloc TEXT NOT NULL, ref_size INTEGER NOT NULL, predicted_ns REAL NOT NULL,
  standard_ns REAL NOT NULL, reason TEXT NOT NULL,
  PRIMARY KEY (run_id, direction, size_lo));
)SQL";

constexpr const char* kRunColumns =
    "id, platform_name, platform_version, device_name, driver_version, cpu_model, kernel, "
    "device_vendor, device_type, hostname, hetopt_version, created_utc, quick, duration_s, "
    "memlock_limit, lock_beyond_limit";

bool fail(std::string* error, const std::string& what, const std::string& detail) {
  *error = what + ": " + detail;
  return false;
}

std::string joinTimes(const std::vector<double>& times) {
  std::string out;
  char buf[32];
  for (double t : times) {
    snprintf(buf, sizeof buf, out.empty() ? "%.0f" : " %.0f", t);
    out += buf;
  }
  return out;
}

std::vector<double> splitTimes(const std::string& text) {
  std::vector<double> out;
  const char* p = text.c_str();
  char* end = nullptr;
  for (double v = strtod(p, &end); end != p; v = strtod(p, &end)) {
    out.push_back(v);
    p = end;
  }
  return out;
}

bool tableExists(Db& db, const char* name, bool* exists, std::string* error) {
  DbStatement q(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  q.bind(1, std::string(name));
  if (q.step() != DbStatement::Step::Row) return fail(error, db.path(), q.error());
  *exists = q.columnInt(0) > 0;
  return true;
}

RunInfo readRunInfo(const DbStatement& q, int64_t* id) {
  RunInfo r;
  *id = q.columnInt(0);
  r.key.platformName = q.columnText(1);
  r.key.platformVersion = q.columnText(2);
  r.key.deviceName = q.columnText(3);
  r.key.driverVersion = q.columnText(4);
  r.key.cpuModel = q.columnText(5);
  r.key.kernel = q.columnText(6);
  r.deviceVendor = q.columnText(7);
  r.deviceType = q.columnText(8);
  r.hostname = q.columnText(9);
  r.hetoptVersion = q.columnText(10);
  r.createdUtc = q.columnText(11);
  r.quick = q.columnInt(12) != 0;
  r.durationS = q.columnDouble(13);
  r.memlockLimit = q.columnIsNull(14) ? UINT64_MAX : static_cast<uint64_t>(q.columnInt(14));
  r.lockBeyondLimit = q.columnInt(15) != 0;
  return r;
}

// Loads everything below the run row.
bool loadDetails(Db& db, CharacterizationRun* run, std::string* error, bool samples = true) {
  const std::string where = db.path() + ": run " + std::to_string(run->id);
  auto badName = [&](const std::string& what, const std::string& name) {
    return fail(error, where, "unknown " + what + " '" + name + "' (DB damaged or from another hetopt)");
  };
  {
    DbStatement q(db, "SELECT policy, state, reason, max_size FROM char_policies WHERE run_id = ?");
    q.bind(1, run->id);
    DbStatement::Step s;
    while ((s = q.step()) == DbStatement::Step::Row) {
      PolicyAvailability a;
      if (!policyFromName(q.columnText(0).c_str(), &a.policy)) return badName("policy", q.columnText(0));
      std::string state = q.columnText(1);
      bool known = false;
      for (auto st : {PolicyAvailability::State::Available, PolicyAvailability::State::Partial,
                      PolicyAvailability::State::Unavailable}) {
        if (state == availabilityName(st)) {
          a.state = st;
          known = true;
        }
      }
      if (!known) return badName("availability", state);
      a.reason = q.columnText(2);
      a.maxSize = static_cast<uint64_t>(q.columnInt(3));
      run->policies.push_back(a);
    }
    if (s == DbStatement::Step::Error) return fail(error, where, q.error());
    std::sort(run->policies.begin(), run->policies.end(),
              [](const PolicyAvailability& a, const PolicyAvailability& b) { return a.policy < b.policy; });
  }
  if (samples) {
    DbStatement q(db,
                  "SELECT measure, policy, concurrency, size, median_ns, q1_ns, q3_ns, min_ns, "
                  "max_ns, times_ns FROM char_samples WHERE run_id = ? "
                  "ORDER BY measure, policy, concurrency, size");
    q.bind(1, run->id);
    DbStatement::Step s;
    while ((s = q.step()) == DbStatement::Step::Row) {
      Sample x;
      if (!measureFromName(q.columnText(0), &x.kind)) return badName("measure", q.columnText(0));
      if (!policyFromName(q.columnText(1).c_str(), &x.policy)) return badName("policy", q.columnText(1));
      x.concurrency = static_cast<int>(q.columnInt(2));
      x.size = static_cast<uint64_t>(q.columnInt(3));
      x.medianNs = q.columnDouble(4);
      x.q1Ns = q.columnDouble(5);
      x.q3Ns = q.columnDouble(6);
      x.minNs = q.columnDouble(7);
      x.maxNs = q.columnDouble(8);
      x.timesNs = splitTimes(q.columnText(9));
      run->samples.push_back(std::move(x));
    }
    if (s == DbStatement::Step::Error) return fail(error, where, q.error());
  }
  {
    DbStatement q(db,
                  "SELECT measure, policy, concurrency, points, rms_rel_err, max_rel_err, size_min, "
                  "size_max FROM char_fits WHERE run_id = ? ORDER BY measure, policy, concurrency");
    DbStatement seg(db,
                    "SELECT size_lo, latency_ns, ns_per_byte FROM char_fit_segments WHERE run_id = ? "
                    "AND measure = ? AND policy = ? AND concurrency = ? ORDER BY idx");
    q.bind(1, run->id);
    DbStatement::Step s;
    while ((s = q.step()) == DbStatement::Step::Row) {
      Fit f;
      if (!measureFromName(q.columnText(0), &f.kind)) return badName("measure", q.columnText(0));
      if (!policyFromName(q.columnText(1).c_str(), &f.policy)) return badName("policy", q.columnText(1));
      f.concurrency = static_cast<int>(q.columnInt(2));
      f.fn.points = static_cast<int>(q.columnInt(3));
      f.fn.rmsRelErr = q.columnDouble(4);
      f.fn.maxRelErr = q.columnDouble(5);
      f.fn.sizeMin = q.columnDouble(6);
      f.fn.sizeMax = q.columnDouble(7);
      seg.reset();
      seg.bind(1, run->id).bind(2, q.columnText(0)).bind(3, q.columnText(1)).bind(4, q.columnInt(2));
      DbStatement::Step t;
      while ((t = seg.step()) == DbStatement::Step::Row) {
        if (f.fn.count == CostFunction::kMaxSegments)
          return fail(error, where, "a fit with too many segments");
        f.fn.segments[f.fn.count++] = {seg.columnDouble(0), seg.columnDouble(1), seg.columnDouble(2)};
      }
      if (t == DbStatement::Step::Error) return fail(error, where, seg.error());
      if (f.fn.count == 0) return fail(error, where, "a fit without segments");
      run->fits.push_back(f);
    }
    if (s == DbStatement::Step::Error) return fail(error, where, q.error());
  }
  {
    DbStatement q(db,
                  "SELECT direction, size_lo, size_hi, policy, alloc, ref_size, predicted_ns, "
                  "standard_ns, reason FROM char_decisions WHERE run_id = ? "
                  "ORDER BY direction = 'h2d' DESC, direction = 'd2h' DESC, size_lo");
    q.bind(1, run->id);
    DbStatement::Step s;
    while ((s = q.step()) == DbStatement::Step::Row) {
      Decision d;
      if (!directionFromName(q.columnText(0), &d.direction)) return badName("direction", q.columnText(0));
      d.sizeLo = static_cast<uint64_t>(q.columnInt(1));
      d.sizeHi = q.columnIsNull(2) ? UINT64_MAX : static_cast<uint64_t>(q.columnInt(2));
      if (!policyFromName(q.columnText(3).c_str(), &d.policy)) return badName("policy", q.columnText(3));
      if (!allocModeFromName(q.columnText(4), &d.alloc)) return badName("allocation mode", q.columnText(4));
      d.refSize = static_cast<uint64_t>(q.columnInt(5));
      d.predictedNs = q.columnDouble(6);
      d.standardNs = q.columnDouble(7);
      d.reason = q.columnText(8);
      run->decisions.push_back(d);
    }
    if (s == DbStatement::Step::Error) return fail(error, where, q.error());
  }
  return true;
}

}  // namespace

bool ensureCharacterizeTables(Db& db, std::string* error) {
  std::string err;
  if (!db.exec(kTables, &err)) return fail(error, db.path() + ": cannot create tables", err);
  return true;
}

bool storeRun(Db& db, CharacterizationRun* run, std::string* error) {
  if (!ensureCharacterizeTables(db, error)) return false;
  std::string err;
  DbTransaction tx(db, &err);
  if (!tx.ok()) return fail(error, db.path(), err);
  const RunInfo& r = run->info;
  {
    // Cascades to every table below the run.
    DbStatement del(db,
                    "DELETE FROM char_runs WHERE platform_name = ? AND platform_version = ? AND "
                    "device_name = ? AND driver_version = ? AND cpu_model = ? AND kernel = ?");
    del.bind(1, r.key.platformName).bind(2, r.key.platformVersion).bind(3, r.key.deviceName);
    del.bind(4, r.key.driverVersion).bind(5, r.key.cpuModel).bind(6, r.key.kernel);
    if (!del.run()) return fail(error, db.path(), del.error());
  }
  {
    DbStatement ins(db,
                    "INSERT INTO char_runs (platform_name, platform_version, device_name, "
                    "driver_version, cpu_model, kernel, device_vendor, device_type, hostname, "
                    "hetopt_version, created_utc, quick, duration_s, memlock_limit, "
                    "lock_beyond_limit) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, r.key.platformName).bind(2, r.key.platformVersion).bind(3, r.key.deviceName);
    ins.bind(4, r.key.driverVersion).bind(5, r.key.cpuModel).bind(6, r.key.kernel);
    ins.bind(7, r.deviceVendor).bind(8, r.deviceType).bind(9, r.hostname);
    ins.bind(10, r.hetoptVersion).bind(11, r.createdUtc).bind(12, int64_t{r.quick});
    ins.bind(13, r.durationS);
    if (r.memlockLimit == UINT64_MAX)
      ins.bindNull(14);
    else
      ins.bind(14, static_cast<int64_t>(r.memlockLimit));
    ins.bind(15, int64_t{r.lockBeyondLimit});
    if (!ins.run()) return fail(error, db.path(), ins.error());
    run->id = db.lastInsertRowId();
  }
  {
    DbStatement ins(db, "INSERT INTO char_policies VALUES (?,?,?,?,?)");
    for (const PolicyAvailability& a : run->policies) {
      ins.reset();
      ins.bind(1, run->id).bind(2, std::string(policyName(a.policy)));
      ins.bind(3, std::string(availabilityName(a.state))).bind(4, a.reason);
      ins.bind(5, static_cast<int64_t>(a.maxSize));
      if (!ins.run()) return fail(error, db.path(), ins.error());
    }
  }
  {
    DbStatement ins(db, "INSERT INTO char_samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const Sample& s : run->samples) {
      ins.reset();
      ins.bind(1, run->id).bind(2, std::string(measureName(s.kind)));
      ins.bind(3, std::string(policyName(s.policy))).bind(4, int64_t{s.concurrency});
      ins.bind(5, static_cast<int64_t>(s.size)).bind(6, static_cast<int64_t>(s.timesNs.size()));
      ins.bind(7, s.medianNs).bind(8, s.q1Ns).bind(9, s.q3Ns).bind(10, s.minNs).bind(11, s.maxNs);
      ins.bind(12, joinTimes(s.timesNs));
      if (!ins.run()) return fail(error, db.path(), ins.error());
    }
  }
  {
    DbStatement ins(db, "INSERT INTO char_fits VALUES (?,?,?,?,?,?,?,?,?)");
    DbStatement seg(db, "INSERT INTO char_fit_segments VALUES (?,?,?,?,?,?,?,?)");
    for (const Fit& f : run->fits) {
      const std::string m = measureName(f.kind), p = policyName(f.policy);
      ins.reset();
      ins.bind(1, run->id).bind(2, m).bind(3, p).bind(4, int64_t{f.concurrency});
      ins.bind(5, int64_t{f.fn.points}).bind(6, f.fn.rmsRelErr).bind(7, f.fn.maxRelErr);
      ins.bind(8, f.fn.sizeMin).bind(9, f.fn.sizeMax);
      if (!ins.run()) return fail(error, db.path(), ins.error());
      for (int i = 0; i < f.fn.count; ++i) {
        seg.reset();
        seg.bind(1, run->id).bind(2, m).bind(3, p).bind(4, int64_t{f.concurrency});
        seg.bind(5, int64_t{i}).bind(6, f.fn.segments[i].sizeLo);
        seg.bind(7, f.fn.segments[i].latencyNs).bind(8, f.fn.segments[i].nsPerByte);
        if (!seg.run()) return fail(error, db.path(), seg.error());
      }
    }
  }
  {
    DbStatement ins(db, "INSERT INTO char_decisions VALUES (?,?,?,?,?,?,?,?,?,?)");
    for (const Decision& d : run->decisions) {
      ins.reset();
      ins.bind(1, run->id).bind(2, std::string(directionName(d.direction)));
      ins.bind(3, static_cast<int64_t>(d.sizeLo));
      if (d.sizeHi == UINT64_MAX)
        ins.bindNull(4);
      else
        ins.bind(4, static_cast<int64_t>(d.sizeHi));
      ins.bind(5, std::string(policyName(d.policy))).bind(6, std::string(allocModeName(d.alloc)));
      ins.bind(7, static_cast<int64_t>(d.refSize)).bind(8, d.predictedNs).bind(9, d.standardNs);
      ins.bind(10, d.reason);
      if (!ins.run()) return fail(error, db.path(), ins.error());
    }
  }
  if (!tx.commit(&err)) return fail(error, db.path(), err);
  return true;
}

bool loadRun(Db& db, const PlatformKey& key, CharacterizationRun* out, bool* found,
             std::string* error) {
  *found = false;
  bool exists = false;
  if (!tableExists(db, "char_runs", &exists, error)) return false;
  if (!exists) return true;
  std::string sql = std::string("SELECT ") + kRunColumns +
                    " FROM char_runs WHERE platform_name = ? AND platform_version = ? AND "
                    "device_name = ? AND driver_version = ? AND cpu_model = ? AND kernel = ?";
  DbStatement q(db, sql.c_str());
  q.bind(1, key.platformName).bind(2, key.platformVersion).bind(3, key.deviceName);
  q.bind(4, key.driverVersion).bind(5, key.cpuModel).bind(6, key.kernel);
  DbStatement::Step s = q.step();
  if (s == DbStatement::Step::Error) return fail(error, db.path(), q.error());
  if (s == DbStatement::Step::Done) return true;
  *out = CharacterizationRun{};
  out->info = readRunInfo(q, &out->id);
  if (!loadDetails(db, out, error)) return false;
  *found = true;
  return true;
}

bool loadAllRuns(Db& db, std::vector<CharacterizationRun>* out, std::string* error, bool samples) {
  out->clear();
  bool exists = false;
  if (!tableExists(db, "char_runs", &exists, error)) return false;
  if (!exists) return true;
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM char_runs ORDER BY id";
  DbStatement q(db, sql.c_str());
  DbStatement::Step s;
  while ((s = q.step()) == DbStatement::Step::Row) {
    CharacterizationRun run;
    run.info = readRunInfo(q, &run.id);
    out->push_back(std::move(run));
  }
  if (s == DbStatement::Step::Error) return fail(error, db.path(), q.error());
  for (CharacterizationRun& run : *out)
    if (!loadDetails(db, &run, error, samples)) return false;
  return true;
}

}  // namespace hetopt::characterize
