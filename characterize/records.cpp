// SPDX-License-Identifier: MIT
/** @file Storing and loading characterizations; see records.h and docs/DB.md.
 * Each char_* table's columns filled by a field list (store/db_row.h); runs by key. */
#include "characterize/records.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "contracts/db_schema.h"
#include "store/db_row.h"

namespace hetopt::characterize {
namespace {

// Which member fills which column, per table (the columns: contracts/db_schema.cpp). Run ids and
// the other keys of child rows are bound by the code that stores the row.
#define FIELD HETOPT_DB_FIELD
#define NAMED HETOPT_DB_NAMED

bool policyFrom(const std::string& name, PolicyKind* out) {
  return policyFromName(name.c_str(), out);
}

bool availabilityFrom(const std::string& name, PolicyAvailability::State* out) {
  for (auto st : {PolicyAvailability::State::Available, PolicyAvailability::State::Partial,
                  PolicyAvailability::State::Unavailable}) {
    if (name == availabilityName(st)) {
      *out = st;
      return true;
    }
  }
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

// A run is found, and replaced, by its key.
const DbField<PlatformKey> kKeyFields[] = {
    FIELD(PlatformKey, "platform_name", platformName),
    FIELD(PlatformKey, "platform_version", platformVersion),
    FIELD(PlatformKey, "device_name", deviceName),
    FIELD(PlatformKey, "driver_version", driverVersion),
    FIELD(PlatformKey, "cpu_model", cpuModel),
    FIELD(PlatformKey, "kernel", kernel),
};

const DbField<RunInfo> kRunFields[] = {
    FIELD(RunInfo, "device_vendor", deviceVendor),
    FIELD(RunInfo, "device_type", deviceType),
    FIELD(RunInfo, "hostname", hostname),
    FIELD(RunInfo, "hetopt_version", hetoptVersion),
    FIELD(RunInfo, "created_utc", createdUtc),
    FIELD(RunInfo, "quick", quick),
    FIELD(RunInfo, "duration_s", durationS),
    HETOPT_DB_UNBOUNDED(RunInfo, "memlock_limit", memlockLimit),
    FIELD(RunInfo, "lock_beyond_limit", lockBeyondLimit),
};

const DbField<PolicyAvailability> kPolicyFields[] = {
    NAMED(PolicyAvailability, "policy", policy, policyName, policyFrom),
    NAMED(PolicyAvailability, "state", state, availabilityName, availabilityFrom),
    FIELD(PolicyAvailability, "reason", reason),
    FIELD(PolicyAvailability, "max_size", maxSize),
};

const DbField<Sample> kSampleFields[] = {
    NAMED(Sample, "measure", kind, measureName, measureFromName),
    NAMED(Sample, "policy", policy, policyName, policyFrom),
    FIELD(Sample, "concurrency", concurrency),
    FIELD(Sample, "size", size),
    {"reps",
     [](DbStatement& s, int i, const Sample& x) {
       dbBind(s, i, static_cast<uint64_t>(x.timesNs.size()));
     },
     [](const DbStatement&, int, Sample*) {
       return true;
     }},  // stored for SQL readers: timesNs holds them
    FIELD(Sample, "median_ns", medianNs),
    FIELD(Sample, "q1_ns", q1Ns),
    FIELD(Sample, "q3_ns", q3Ns),
    FIELD(Sample, "min_ns", minNs),
    FIELD(Sample, "max_ns", maxNs),
    {"times_ns", [](DbStatement& s, int i, const Sample& x) { s.bind(i, joinTimes(x.timesNs)); },
     [](const DbStatement& q, int i, Sample* x) {
       x->timesNs = splitTimes(q.columnText(i));
       return true;
     }},
};

// The first three also key the fit's segments.
const DbField<Fit> kFitFields[] = {
    NAMED(Fit, "measure", kind, measureName, measureFromName),
    NAMED(Fit, "policy", policy, policyName, policyFrom),
    FIELD(Fit, "concurrency", concurrency),
    FIELD(Fit, "points", fn.points),
    FIELD(Fit, "rms_rel_err", fn.rmsRelErr),
    FIELD(Fit, "max_rel_err", fn.maxRelErr),
    FIELD(Fit, "size_min", fn.sizeMin),
    FIELD(Fit, "size_max", fn.sizeMax),
    FIELD(Fit, "outliers", fn.outliers),
};
const std::span<const DbField<Fit>> kFitKeyFields = std::span(kFitFields).first(3);

const DbField<Segment> kSegmentFields[] = {
    FIELD(Segment, "size_lo", sizeLo),
    FIELD(Segment, "latency_ns", latencyNs),
    FIELD(Segment, "ns_per_byte", nsPerByte),
};

const DbField<Decision> kDecisionFields[] = {
    NAMED(Decision, "direction", direction, directionName, directionFromName),
    FIELD(Decision, "size_lo", sizeLo),
    HETOPT_DB_UNBOUNDED(Decision, "size_hi", sizeHi),
    NAMED(Decision, "policy", policy, policyName, policyFrom),
    NAMED(Decision, "alloc", alloc, allocModeName, allocModeFromName),
    FIELD(Decision, "ref_size", refSize),
    FIELD(Decision, "predicted_ns", predictedNs),
    FIELD(Decision, "standard_ns", standardNs),
    FIELD(Decision, "reason", reason),
};

#undef NAMED
#undef FIELD

const DbTable& table(const char* name) { return *dbTable(name); }

/// "platform_name = :platform_name AND ...": the run with a key, bound by kKeyFields.
std::string whereKey() {
  std::string sql = "WHERE ";
  for (const DbField<PlatformKey>& f : kKeyFields)
    sql += std::string(&f == kKeyFields ? "" : " AND ") + f.column + " = :" + f.column;
  return sql;
}

/// Ready for the next child row of run `id`.
void bindRunId(DbStatement& s, int64_t id) {
  s.reset();
  s.bind(s.parameterIndex(":run_id"), id);
}

/// Stores every row of `rows` in `tableName` under run `id`.
template <typename T>
bool storeChildren(Db& db, const char* tableName, std::span<const DbField<T>> fields,
                   const std::vector<T>& rows, int64_t id, std::string* error) {
  DbStatement ins(db, table(tableName).insertSql().c_str());
  for (const T& row : rows) {
    bindRunId(ins, id);
    if (!dbStoreRow(ins, fields, row, db.path() + ": " + tableName, error)) return false;
  }
  return true;
}

/// The rows of `tableName` under run `id`, in `order`.
template <typename T>
bool loadChildren(Db& db, const char* tableName, std::span<const DbField<T>> fields, int64_t id,
                  const char* order, std::vector<T>* out, std::string* error) {
  const DbTable& t = table(tableName);
  DbStatement q(db, t.selectSql(std::string("WHERE run_id = ? ORDER BY ") + order).c_str());
  q.bind(1, id);
  return dbLoadRows(q, t, fields, out, db.path() + ": run " + std::to_string(id), error);
}

bool storeFits(Db& db, const CharacterizationRun& run, std::string* error) {
  DbStatement seg(db, table("char_fit_segments").insertSql().c_str());
  const std::string what = db.path() + ": char_fit_segments";
  std::string why;
  for (const Fit& f : run.fits) {
    for (int i = 0; i < f.fn.count; ++i) {
      bindRunId(seg, run.id);
      seg.bind(seg.parameterIndex(":idx"), int64_t{i});
      if (!dbBindFields(seg, kFitKeyFields, f, &why)) return dbFail(error, what, why);
      if (!dbStoreRow<Segment>(seg, kSegmentFields, f.fn.segments[i], what, error)) return false;
    }
  }
  return true;
}

bool loadSegments(Db& db, int64_t id, Fit* f, std::string* error) {
  const DbTable& segments = table("char_fit_segments");
  DbStatement q(
      db, segments
              .selectSql("WHERE run_id = :run_id AND measure = :measure AND policy = :policy AND "
                         "concurrency = :concurrency ORDER BY idx")
              .c_str());
  q.bind(q.parameterIndex(":run_id"), id);
  const std::string what = db.path() + ": run " + std::to_string(id);
  std::string why;
  if (!dbBindRow(q, kFitKeyFields, *f, &why)) return dbFail(error, what, why);
  std::vector<Segment> rows;
  if (!dbLoadRows<Segment>(q, segments, kSegmentFields, &rows, what, error)) return false;
  if (rows.empty()) return dbFail(error, what, "a fit without segments");
  if (rows.size() > CostFunction::kMaxSegments)
    return dbFail(error, what, "a fit with too many segments");
  f->fn.count = static_cast<int>(rows.size());
  std::copy(rows.begin(), rows.end(), f->fn.segments.begin());
  return true;
}

// Loads everything below the run row.
bool loadDetails(Db& db, CharacterizationRun* run, std::string* error, bool samples = true) {
  if (!loadChildren<PolicyAvailability>(db, "char_policies", kPolicyFields, run->id, "policy",
                                        &run->policies, error))
    return false;
  std::sort(
      run->policies.begin(), run->policies.end(),
      [](const PolicyAvailability& a, const PolicyAvailability& b) { return a.policy < b.policy; });
  if (samples && !loadChildren<Sample>(db, "char_samples", kSampleFields, run->id,
                                       "measure, policy, concurrency, size", &run->samples, error))
    return false;
  if (!loadChildren<Fit>(db, "char_fits", kFitFields, run->id, "measure, policy, concurrency",
                         &run->fits, error))
    return false;
  for (Fit& f : run->fits)
    if (!loadSegments(db, run->id, &f, error)) return false;
  return loadChildren<Decision>(db, "char_decisions", kDecisionFields, run->id,
                                "direction = 'h2d' DESC, direction = 'd2h' DESC, size_lo",
                                &run->decisions, error);
}

/// The runs `q` (made by char_runs' selectSql()) returns, without what is below them.
bool readRuns(Db& db, DbStatement& q, std::vector<CharacterizationRun>* out, std::string* error) {
  const DbTable& runs = table("char_runs");
  const std::string what = db.path() + ": char_runs";
  DbStatement::Step s;
  std::string why;
  while ((s = q.step()) == DbStatement::Step::Row) {
    CharacterizationRun run;
    run.id = q.columnInt(runs.columnIndex("id"));
    if (!dbReadRow<PlatformKey>(q, runs, kKeyFields, &run.info.key, &why) ||
        !dbReadRow<RunInfo>(q, runs, kRunFields, &run.info, &why))
      return dbFail(error, what, why);
    out->push_back(std::move(run));
  }
  return s == DbStatement::Step::Done || dbFail(error, what, q.error());
}

}  // namespace

bool ensureCharacterizeTables(Db& db, std::string* error) {
  std::string err;
  if (!db.exec(createTablesSql(charTables()), &err))
    return dbFail(error, db.path() + ": cannot create tables", err);
  return true;
}

bool storeRun(Db& db, CharacterizationRun* run, std::string* error) {
  if (!ensureCharacterizeTables(db, error)) return false;
  std::string err;
  DbTransaction tx(db, &err);
  if (!tx.ok()) return dbFail(error, db.path(), err);
  const RunInfo& r = run->info;
  {
    // Cascades to every table below the run.
    DbStatement del(db, ("DELETE FROM char_runs " + whereKey()).c_str());
    if (!dbBindRow<PlatformKey>(del, kKeyFields, r.key, &err)) return dbFail(error, db.path(), err);
    if (!del.run()) return dbFail(error, db.path(), del.error());
  }
  {
    DbStatement ins(db, table("char_runs").insertSql().c_str());
    if (!dbBindFields<PlatformKey>(ins, kKeyFields, r.key, &err))
      return dbFail(error, db.path(), err);
    if (!dbStoreRow<RunInfo>(ins, kRunFields, r, db.path() + ": char_runs", error)) return false;
    run->id = db.lastInsertRowId();
  }
  if (!storeChildren<PolicyAvailability>(db, "char_policies", kPolicyFields, run->policies, run->id,
                                         error) ||
      !storeChildren<Sample>(db, "char_samples", kSampleFields, run->samples, run->id, error) ||
      !storeChildren<Fit>(db, "char_fits", kFitFields, run->fits, run->id, error) ||
      !storeFits(db, *run, error) ||
      !storeChildren<Decision>(db, "char_decisions", kDecisionFields, run->decisions, run->id,
                               error))
    return false;
  if (!tx.commit(&err)) return dbFail(error, db.path(), err);
  return true;
}

bool loadRun(Db& db, const PlatformKey& key, CharacterizationRun* out, bool* found,
             std::string* error) {
  *found = false;
  bool exists = false;
  if (!db.hasTable("char_runs", &exists, error)) return false;
  if (!exists) return true;
  DbStatement q(db, table("char_runs").selectSql(whereKey()).c_str());
  std::string why;
  if (!dbBindRow<PlatformKey>(q, kKeyFields, key, &why)) return dbFail(error, db.path(), why);
  std::vector<CharacterizationRun> runs;
  if (!readRuns(db, q, &runs, error)) return false;
  if (runs.empty()) return true;
  if (!loadDetails(db, &runs[0], error)) return false;
  *out = std::move(runs[0]);
  *found = true;
  return true;
}

bool loadAllRuns(Db& db, std::vector<CharacterizationRun>* out, std::string* error, bool samples) {
  out->clear();
  bool exists = false;
  if (!db.hasTable("char_runs", &exists, error)) return false;
  if (!exists) return true;
  DbStatement q(db, table("char_runs").selectSql("ORDER BY id").c_str());
  if (!readRuns(db, q, out, error)) return false;
  for (CharacterizationRun& run : *out)
    if (!loadDetails(db, &run, error, samples)) return false;
  return true;
}

}  // namespace hetopt::characterize
