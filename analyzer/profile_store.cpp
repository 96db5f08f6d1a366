// SPDX-License-Identifier: MIT
/** @file Storing and loading application profiles; see profile_store.h and docs/DB.md. */
#include "analyzer/profile_store.h"

#include <cmath>
#include <cstring>

namespace hetopt::analyzer {
namespace {

// uint64 values (site keys, offsets) are stored bit-for-bit in SQLite's signed INTEGER.
constexpr const char* kTables = R"SQL(
CREATE TABLE IF NOT EXISTS app_profiles (
  id INTEGER PRIMARY KEY,
  program_path TEXT NOT NULL, program_key TEXT NOT NULL, build_id TEXT NOT NULL,
  content_hash TEXT NOT NULL, device TEXT NOT NULL, trace_file TEXT NOT NULL,
  created_utc TEXT NOT NULL, hetopt_version TEXT NOT NULL,
  eligible INTEGER NOT NULL, ratio REAL, threshold REAL NOT NULL,
  communication_ns REAL NOT NULL, computation_ns REAL NOT NULL, reason TEXT NOT NULL,
  has_device_times INTEGER NOT NULL, total_ns REAL NOT NULL, kernel_ns REAL NOT NULL,
  comm_part_ns REAL NOT NULL, cpu_sync_ns REAL NOT NULL, h2d_ns REAL NOT NULL,
  d2h_ns REAL NOT NULL, launch_ns REAL NOT NULL, dispatch_sync_ns REAL NOT NULL,
  kernels INTEGER NOT NULL, host_only_sites INTEGER NOT NULL,
  host_only_allocations INTEGER NOT NULL, tracked_allocations INTEGER NOT NULL,
  warnings TEXT NOT NULL,
  contexts INTEGER NOT NULL DEFAULT 0, first_context_devices INTEGER NOT NULL DEFAULT 0,
  first_call_ns INTEGER NOT NULL DEFAULT 0, first_context_ns INTEGER NOT NULL DEFAULT 0,
  enumerate_ns INTEGER NOT NULL DEFAULT 0, context_ns INTEGER NOT NULL DEFAULT 0,
  executable TEXT NOT NULL DEFAULT '', script_kind INTEGER NOT NULL DEFAULT 0,
  script TEXT NOT NULL DEFAULT '', script_hash TEXT NOT NULL DEFAULT '',
  forked_children INTEGER NOT NULL DEFAULT 0, recording_ns REAL NOT NULL DEFAULT 0,
  UNIQUE (program_path, program_key));
CREATE TABLE IF NOT EXISTS app_sites (
  profile_id INTEGER NOT NULL REFERENCES app_profiles(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL, site_key INTEGER NOT NULL,
  has_source INTEGER NOT NULL, function TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL,
  module TEXT NOT NULL, module_offset INTEGER NOT NULL, location_note TEXT NOT NULL,
  allocator TEXT NOT NULL, allocations INTEGER NOT NULL, feeding_allocations INTEGER NOT NULL,
  min_alloc_bytes INTEGER NOT NULL, max_alloc_bytes INTEGER NOT NULL,
  typical_alloc_bytes INTEGER NOT NULL, peak_live_bytes INTEGER NOT NULL,
  peak_live_blocks INTEGER NOT NULL,
  h2d_transfers INTEGER NOT NULL, h2d_bytes INTEGER NOT NULL, h2d_typical INTEGER NOT NULL,
  h2d_max INTEGER NOT NULL, h2d_ns REAL NOT NULL,
  d2h_transfers INTEGER NOT NULL, d2h_bytes INTEGER NOT NULL, d2h_typical INTEGER NOT NULL,
  d2h_max INTEGER NOT NULL, d2h_ns REAL NOT NULL,
  gain_known INTEGER NOT NULL, gain_note TEXT NOT NULL, policy TEXT NOT NULL,
  alloc_mode TEXT NOT NULL, standard_ns REAL NOT NULL, optimized_ns REAL NOT NULL,
  allocated_before_opencl INTEGER NOT NULL DEFAULT 0, lead_ns INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (profile_id, rank));
CREATE INDEX IF NOT EXISTS app_sites_by_key ON app_sites(site_key);
CREATE TABLE IF NOT EXISTS app_site_frames (
  profile_id INTEGER NOT NULL REFERENCES app_profiles(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL, depth INTEGER NOT NULL,
  module TEXT NOT NULL, build_id TEXT NOT NULL, module_offset INTEGER NOT NULL,
  PRIMARY KEY (profile_id, rank, depth));
CREATE TABLE IF NOT EXISTS app_transfer_sizes (
  profile_id INTEGER NOT NULL REFERENCES app_profiles(id) ON DELETE CASCADE,
  owner TEXT NOT NULL, owner_rank INTEGER NOT NULL, direction TEXT NOT NULL, idx INTEGER NOT NULL,
  bytes INTEGER NOT NULL, count INTEGER NOT NULL,
  PRIMARY KEY (profile_id, owner, owner_rank, direction, idx));
CREATE TABLE IF NOT EXISTS app_untracked (
  profile_id INTEGER NOT NULL REFERENCES app_profiles(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL, kind TEXT NOT NULL, what TEXT NOT NULL, module TEXT NOT NULL,
  region_bytes INTEGER NOT NULL,
  h2d_transfers INTEGER NOT NULL, h2d_bytes INTEGER NOT NULL, h2d_typical INTEGER NOT NULL,
  h2d_max INTEGER NOT NULL, h2d_ns REAL NOT NULL,
  d2h_transfers INTEGER NOT NULL, d2h_bytes INTEGER NOT NULL, d2h_typical INTEGER NOT NULL,
  d2h_max INTEGER NOT NULL, d2h_ns REAL NOT NULL,
  module_key INTEGER NOT NULL DEFAULT 0, module_offset INTEGER NOT NULL DEFAULT 0,
  map_bytes INTEGER NOT NULL DEFAULT 0, anonymous INTEGER NOT NULL DEFAULT 0,
  gain_known INTEGER NOT NULL DEFAULT 0, gain_note TEXT NOT NULL DEFAULT '',
  standard_ns REAL NOT NULL DEFAULT 0, optimized_ns REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (profile_id, rank));
CREATE TABLE IF NOT EXISTS app_launchers (
  id INTEGER PRIMARY KEY, launcher_path TEXT NOT NULL, launcher_key TEXT NOT NULL,
  created_utc TEXT NOT NULL, UNIQUE (launcher_path, launcher_key));
CREATE TABLE IF NOT EXISTS app_launched (
  launcher_id INTEGER NOT NULL REFERENCES app_launchers(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL, pid INTEGER NOT NULL, program_path TEXT NOT NULL,
  program_key TEXT NOT NULL, description TEXT NOT NULL,
  PRIMARY KEY (launcher_id, idx));
CREATE TABLE IF NOT EXISTS app_run_breakdowns (
  profile_id INTEGER NOT NULL REFERENCES app_profiles(id) ON DELETE CASCADE,
  label TEXT NOT NULL, total_ns REAL NOT NULL, kernel_ns REAL NOT NULL,
  comm_part_ns REAL NOT NULL, cpu_sync_ns REAL NOT NULL,
  started_ns INTEGER NOT NULL DEFAULT 0, pid INTEGER NOT NULL DEFAULT 0,
  wall_ns INTEGER NOT NULL DEFAULT 0, plan_id INTEGER NOT NULL DEFAULT 0,
  predicted_saving_ns REAL NOT NULL DEFAULT 0,
  pinned_transfers INTEGER NOT NULL DEFAULT 0, pinned_bytes INTEGER NOT NULL DEFAULT 0,
  pageable_transfers INTEGER NOT NULL DEFAULT 0, pageable_bytes INTEGER NOT NULL DEFAULT 0,
  other_transfers INTEGER NOT NULL DEFAULT 0, other_bytes INTEGER NOT NULL DEFAULT 0,
  writer TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (profile_id, label));
CREATE TABLE IF NOT EXISTS app_run_sites (
  profile_id INTEGER NOT NULL, label TEXT NOT NULL, site_key INTEGER NOT NULL,
  transfers INTEGER NOT NULL, bytes INTEGER NOT NULL, pinned INTEGER NOT NULL,
  pageable INTEGER NOT NULL,
  PRIMARY KEY (profile_id, label, site_key),
  FOREIGN KEY (profile_id, label) REFERENCES app_run_breakdowns(profile_id, label) ON DELETE CASCADE);
)SQL";

int64_t asInt(uint64_t v) {
  int64_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}
uint64_t asUnsigned(int64_t v) {
  uint64_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}

bool fail(std::string* error, const std::string& what, const std::string& detail) {
  *error = what + ": " + detail;
  return false;
}

std::string joinLines(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool tablesExist(Db& db, bool* exist, std::string* error, const char* table = "app_profiles") {
  DbStatement q(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
  q.bind(1, std::string(table));
  if (!q.ok() || q.step() != DbStatement::Step::Row) return fail(error, db.path(), q.error());
  *exist = q.columnInt(0) > 0;
  return true;
}

/// Named profiles ("@NAME") hold one profile per name, whatever program it was traced from.
bool isNamedPath(const std::string& path) { return !path.empty() && path[0] == '@'; }

// Binds the five columns of one direction's TransferStats starting at `first`.
void bindTransfers(DbStatement& s, int first, const TransferStats& t) {
  s.bind(first, asInt(t.transfers)).bind(first + 1, asInt(t.bytes));
  s.bind(first + 2, asInt(t.typicalBytes)).bind(first + 3, asInt(t.maxBytes));
  s.bind(first + 4, t.deviceNs);
}
void readTransfers(DbStatement& s, int first, TransferStats* t) {
  t->transfers = asUnsigned(s.columnInt(first));
  t->bytes = asUnsigned(s.columnInt(first + 1));
  t->typicalBytes = asUnsigned(s.columnInt(first + 2));
  t->maxBytes = asUnsigned(s.columnInt(first + 3));
  t->deviceNs = s.columnDouble(first + 4);
}

bool storeSizes(Db& db, int64_t profileId, const char* owner, int rank, const char* direction,
                const TransferStats& t, std::string* error) {
  DbStatement s(db,
                "INSERT INTO app_transfer_sizes (profile_id, owner, owner_rank, direction, idx, "
                "bytes, count) VALUES (?,?,?,?,?,?,?)");
  for (size_t i = 0; i < t.sizes.size() && i < TransferStats::kStoredSizes; ++i) {
    s.reset();
    s.bind(1, profileId).bind(2, std::string(owner)).bind(3, int64_t{rank});
    s.bind(4, std::string(direction)).bind(5, static_cast<int64_t>(i));
    s.bind(6, asInt(t.sizes[i].bytes)).bind(7, asInt(t.sizes[i].count));
    if (!s.run()) return fail(error, "storing transfer sizes", s.error());
  }
  return true;
}

bool loadSizes(Db& db, int64_t profileId, const char* owner, int rank, const char* direction,
               TransferStats* t, std::string* error) {
  DbStatement q(db,
                "SELECT bytes, count FROM app_transfer_sizes WHERE profile_id=? AND owner=? AND "
                "owner_rank=? AND direction=? ORDER BY idx");
  q.bind(1, profileId).bind(2, std::string(owner)).bind(3, int64_t{rank});
  q.bind(4, std::string(direction));
  DbStatement::Step st;
  while ((st = q.step()) == DbStatement::Step::Row)
    t->sizes.push_back({asUnsigned(q.columnInt(0)), asUnsigned(q.columnInt(1))});
  return st == DbStatement::Step::Done || fail(error, "loading transfer sizes", q.error());
}

}  // namespace

bool ensureProfileTables(Db& db, std::string* error) {
  std::string err;
  if (!db.exec(kTables, &err)) return fail(error, "creating the profile tables in " + db.path(), err);
  return true;
}

bool storeProfile(Db& db, const AppProfile& p, int64_t* idOut, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbTransaction tx(db, error);
  if (!tx.ok()) return false;
  {
    // Cascades to the sites, frames, sizes, untracked memory and run breakdowns of the old one.
    DbStatement del(db, isNamedPath(p.program.profilePath())
                            ? "DELETE FROM app_profiles WHERE program_path=?1"
                            : "DELETE FROM app_profiles WHERE program_path=?1 AND program_key=?2");
    del.bind(1, p.program.profilePath());
    if (!isNamedPath(p.program.profilePath())) del.bind(2, p.program.key());
    if (!del.run()) return fail(error, "replacing the profile", del.error());
  }
  int64_t id = 0;
  {
    DbStatement s(db,
                  "INSERT INTO app_profiles (program_path, program_key, build_id, content_hash, "
                  "device, trace_file, created_utc, hetopt_version, eligible, ratio, threshold, "
                  "communication_ns, computation_ns, reason, has_device_times, total_ns, kernel_ns, "
                  "comm_part_ns, cpu_sync_ns, h2d_ns, d2h_ns, launch_ns, dispatch_sync_ns, kernels, "
                  "host_only_sites, host_only_allocations, tracked_allocations, warnings, "
                  "contexts, first_context_devices, first_call_ns, first_context_ns, enumerate_ns, "
                  "context_ns, executable, script_kind, script, script_hash, forked_children, "
                  "recording_ns) VALUES "
                  "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    const Eligibility& e = p.eligibility;
    const Breakdown& b = p.breakdown;
    s.bind(1, p.program.profilePath()).bind(2, p.program.key()).bind(3, p.program.buildId);
    s.bind(4, p.program.contentHash).bind(5, p.device).bind(6, p.traceFile);
    s.bind(7, p.createdUtc).bind(8, p.hetoptVersion).bind(9, int64_t{e.eligible});
    // An infinite ratio (no kernel time) is stored as NULL: SQLite has no infinity literal.
    if (std::isfinite(e.ratio)) s.bind(10, e.ratio);
    else s.bindNull(10);
    s.bind(11, e.threshold).bind(12, e.communicationNs).bind(13, e.computationNs);
    s.bind(14, e.reason).bind(15, int64_t{b.hasDeviceTimes}).bind(16, b.totalNs);
    s.bind(17, b.kernelNs).bind(18, b.communicationNs).bind(19, b.cpuSyncNs).bind(20, b.h2dNs);
    s.bind(21, b.d2hNs).bind(22, b.launchNs).bind(23, b.dispatchSyncNs);
    s.bind(24, asInt(b.kernels)).bind(25, asInt(p.hostOnlySites));
    s.bind(26, asInt(p.hostOnlyAllocations)).bind(27, asInt(p.trackedAllocations));
    s.bind(28, joinLines(p.warnings));
    s.bind(29, asInt(p.contextsCreated)).bind(30, asInt(p.firstContextDevices));
    s.bind(31, asInt(p.startup.firstCallNs)).bind(32, asInt(p.startup.firstContextNs));
    s.bind(33, asInt(p.startup.enumerateNs)).bind(34, asInt(p.startup.contextNs));
    s.bind(35, p.program.path).bind(36, int64_t{static_cast<int>(p.program.script.kind)});
    s.bind(37, p.program.script.name).bind(38, p.program.script.hash);
    s.bind(39, asInt(p.forkedChildren)).bind(40, p.breakdown.recordingNs);
    if (!s.run()) return fail(error, "storing the profile", s.error());
    id = db.lastInsertRowId();
  }
  DbStatement site(db,
                   "INSERT INTO app_sites (profile_id, rank, site_key, has_source, function, file, "
                   "line, module, module_offset, location_note, allocator, allocations, "
                   "feeding_allocations, min_alloc_bytes, max_alloc_bytes, typical_alloc_bytes, "
                   "peak_live_bytes, peak_live_blocks, h2d_transfers, h2d_bytes, h2d_typical, "
                   "h2d_max, h2d_ns, d2h_transfers, d2h_bytes, d2h_typical, d2h_max, d2h_ns, "
                   "gain_known, gain_note, policy, alloc_mode, standard_ns, optimized_ns, "
                   "allocated_before_opencl, lead_ns) VALUES "
                   "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  DbStatement frame(db,
                    "INSERT INTO app_site_frames (profile_id, rank, depth, module, build_id, "
                    "module_offset) VALUES (?,?,?,?,?,?)");
  for (size_t r = 0; r < p.candidates.size(); ++r) {
    const CandidateSite& c = p.candidates[r];
    site.reset();
    site.bind(1, id).bind(2, static_cast<int64_t>(r)).bind(3, asInt(c.siteKey));
    site.bind(4, int64_t{c.location.hasSource}).bind(5, c.location.source.function);
    site.bind(6, c.location.source.file).bind(7, int64_t{c.location.source.line});
    site.bind(8, c.location.modulePath).bind(9, asInt(c.location.offset));
    site.bind(10, c.location.note).bind(11, c.allocator).bind(12, asInt(c.allocations));
    site.bind(13, asInt(c.feedingAllocations)).bind(14, asInt(c.minAllocBytes));
    site.bind(15, asInt(c.maxAllocBytes)).bind(16, asInt(c.typicalAllocBytes));
    site.bind(17, asInt(c.peakLiveBytes)).bind(18, asInt(c.peakLiveBlocks));
    bindTransfers(site, 19, c.h2d);
    bindTransfers(site, 24, c.d2h);
    site.bind(29, int64_t{c.gain.known}).bind(30, c.gain.note).bind(31, c.gain.policy);
    site.bind(32, c.gain.allocMode).bind(33, c.gain.standardNs).bind(34, c.gain.optimizedNs);
    site.bind(35, int64_t{c.allocatedBeforeOpenCL}).bind(36, asInt(c.leadNs));
    if (!site.run()) return fail(error, "storing a candidate site", site.error());
    for (size_t d = 0; d < c.frames.size(); ++d) {
      frame.reset();
      frame.bind(1, id).bind(2, static_cast<int64_t>(r)).bind(3, static_cast<int64_t>(d));
      frame.bind(4, c.frames[d].modulePath).bind(5, c.frames[d].buildId);
      frame.bind(6, asInt(c.frames[d].offset));
      if (!frame.run()) return fail(error, "storing a site frame", frame.error());
    }
    if (!storeSizes(db, id, "site", static_cast<int>(r), "h2d", c.h2d, error) ||
        !storeSizes(db, id, "site", static_cast<int>(r), "d2h", c.d2h, error))
      return false;
  }
  DbStatement un(db,
                 "INSERT INTO app_untracked (profile_id, rank, kind, what, module, region_bytes, "
                 "h2d_transfers, h2d_bytes, h2d_typical, h2d_max, h2d_ns, d2h_transfers, "
                 "d2h_bytes, d2h_typical, d2h_max, d2h_ns, module_key, module_offset, map_bytes, "
                 "anonymous, gain_known, gain_note, standard_ns, optimized_ns) VALUES "
                 "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (size_t r = 0; r < p.untracked.size(); ++r) {
    const UntrackedMemory& u = p.untracked[r];
    un.reset();
    un.bind(1, id).bind(2, static_cast<int64_t>(r)).bind(3, std::string(untrackedKindName(u.kind)));
    un.bind(4, u.what).bind(5, u.modulePath).bind(6, asInt(u.regionBytes));
    bindTransfers(un, 7, u.h2d);
    bindTransfers(un, 12, u.d2h);
    un.bind(17, asInt(u.moduleKey)).bind(18, asInt(u.moduleOffset)).bind(19, asInt(u.mapBytes));
    un.bind(20, int64_t{u.anonymous}).bind(21, int64_t{u.gain.known}).bind(22, u.gain.note);
    un.bind(23, u.gain.standardNs).bind(24, u.gain.optimizedNs);
    if (!un.run()) return fail(error, "storing untracked memory", un.error());
    if (!storeSizes(db, id, "untracked", static_cast<int>(r), "h2d", u.h2d, error) ||
        !storeSizes(db, id, "untracked", static_cast<int>(r), "d2h", u.d2h, error))
      return false;
  }
  if (!tx.commit(error)) return false;
  if (idOut) *idOut = id;
  return true;
}

bool loadProfile(Db& db, const ProgramIdentity& identity, AppProfile* out, ProfileLookup* lookup,
                 std::string* error) {
  return loadProfileAt(db, identity.profilePath(), identity.key(), out, lookup, error);
}

bool loadProfileAt(Db& db, const std::string& path, const std::string& key, AppProfile* out,
                   ProfileLookup* lookup, std::string* error) {
  *lookup = ProfileLookup{};
  bool exist = false;
  if (!tablesExist(db, &exist, error)) return false;
  if (!exist) return true;
  {
    // Newest first: the stale case names the most recent other build.
    DbStatement q(db,
                  "SELECT id, program_key, created_utc FROM app_profiles WHERE program_path=? "
                  "ORDER BY (program_key = ?) DESC, id DESC LIMIT 1");
    q.bind(1, path).bind(2, key);
    DbStatement::Step st = q.step();
    if (st == DbStatement::Step::Error) return fail(error, "looking up the profile", q.error());
    if (st == DbStatement::Step::Done) return true;
    if (q.columnText(1) != key) {
      lookup->storedKey = q.columnText(1);
      lookup->storedCreatedUtc = q.columnText(2);
      // A named profile is the one the user asked for: loaded, with the other identity said.
      if (!isNamedPath(path)) {
        lookup->status = ProfileLookup::Status::Stale;
        return true;
      }
    }
    lookup->id = q.columnInt(0);
  }
  AppProfile p;
  {
    DbStatement q(db,
                  "SELECT program_path, build_id, content_hash, device, trace_file, created_utc, "
                  "hetopt_version, eligible, ratio, threshold, communication_ns, computation_ns, "
                  "reason, has_device_times, total_ns, kernel_ns, comm_part_ns, cpu_sync_ns, "
                  "h2d_ns, d2h_ns, launch_ns, dispatch_sync_ns, kernels, host_only_sites, "
                  "host_only_allocations, tracked_allocations, warnings, contexts, "
                  "first_context_devices, first_call_ns, first_context_ns, enumerate_ns, context_ns, "
                  "executable, script_kind, script, script_hash, forked_children, recording_ns "
                  "FROM app_profiles WHERE id=?");
    q.bind(1, lookup->id);
    if (q.step() != DbStatement::Step::Row) return fail(error, "loading the profile", q.error());
    const std::string stored = q.columnText(0);
    // Rows from before schema 5 have no executable: their path is the executable's.
    p.program.path = q.columnText(33).empty() ? stored : q.columnText(33);
    if (isNamedPath(stored)) p.program.profileName = stored.substr(1);
    const int64_t kind = q.columnInt(34);
    if (kind > 0 && kind <= static_cast<int64_t>(ScriptRef::Kind::Code)) {
      p.program.script.kind = static_cast<ScriptRef::Kind>(kind);
      p.program.script.name = q.columnText(35);
      p.program.script.hash = q.columnText(36);
    }
    p.forkedChildren = asUnsigned(q.columnInt(37));
    p.breakdown.recordingNs = q.columnDouble(38);
    p.program.buildId = q.columnText(1);
    p.program.contentHash = q.columnText(2);
    p.device = q.columnText(3);
    p.traceFile = q.columnText(4);
    p.createdUtc = q.columnText(5);
    p.hetoptVersion = q.columnText(6);
    Eligibility& e = p.eligibility;
    e.eligible = q.columnInt(7) != 0;
    e.ratio = q.columnIsNull(8) ? HUGE_VAL : q.columnDouble(8);
    e.threshold = q.columnDouble(9);
    e.communicationNs = q.columnDouble(10);
    e.computationNs = q.columnDouble(11);
    e.reason = q.columnText(12);
    Breakdown& b = p.breakdown;
    b.hasDeviceTimes = q.columnInt(13) != 0;
    b.totalNs = q.columnDouble(14);
    b.kernelNs = q.columnDouble(15);
    b.communicationNs = q.columnDouble(16);
    b.cpuSyncNs = q.columnDouble(17);
    b.h2dNs = q.columnDouble(18);
    b.d2hNs = q.columnDouble(19);
    b.launchNs = q.columnDouble(20);
    b.dispatchSyncNs = q.columnDouble(21);
    b.kernels = asUnsigned(q.columnInt(22));
    p.hostOnlySites = asUnsigned(q.columnInt(23));
    p.hostOnlyAllocations = asUnsigned(q.columnInt(24));
    p.trackedAllocations = asUnsigned(q.columnInt(25));
    p.warnings = splitLines(q.columnText(26));
    p.contextsCreated = asUnsigned(q.columnInt(27));
    p.firstContextDevices = asUnsigned(q.columnInt(28));
    p.startup = {asUnsigned(q.columnInt(29)), asUnsigned(q.columnInt(30)),
                 asUnsigned(q.columnInt(31)), asUnsigned(q.columnInt(32))};
  }
  {
    DbStatement q(db,
                  "SELECT rank, site_key, has_source, function, file, line, module, module_offset, "
                  "location_note, allocator, allocations, feeding_allocations, min_alloc_bytes, "
                  "max_alloc_bytes, typical_alloc_bytes, peak_live_bytes, peak_live_blocks, "
                  "h2d_transfers, h2d_bytes, h2d_typical, h2d_max, h2d_ns, d2h_transfers, "
                  "d2h_bytes, d2h_typical, d2h_max, d2h_ns, gain_known, gain_note, policy, "
                  "alloc_mode, standard_ns, optimized_ns, allocated_before_opencl, lead_ns "
                  "FROM app_sites WHERE profile_id=? "
                  "ORDER BY rank");
    q.bind(1, lookup->id);
    DbStatement::Step st;
    while ((st = q.step()) == DbStatement::Step::Row) {
      CandidateSite c;
      c.siteKey = asUnsigned(q.columnInt(1));
      c.location.hasSource = q.columnInt(2) != 0;
      c.location.source.function = q.columnText(3);
      c.location.source.file = q.columnText(4);
      c.location.source.line = static_cast<uint32_t>(q.columnInt(5));
      c.location.modulePath = q.columnText(6);
      c.location.offset = asUnsigned(q.columnInt(7));
      c.location.note = q.columnText(8);
      c.allocator = q.columnText(9);
      c.allocations = asUnsigned(q.columnInt(10));
      c.feedingAllocations = asUnsigned(q.columnInt(11));
      c.minAllocBytes = asUnsigned(q.columnInt(12));
      c.maxAllocBytes = asUnsigned(q.columnInt(13));
      c.typicalAllocBytes = asUnsigned(q.columnInt(14));
      c.peakLiveBytes = asUnsigned(q.columnInt(15));
      c.peakLiveBlocks = asUnsigned(q.columnInt(16));
      readTransfers(q, 17, &c.h2d);
      readTransfers(q, 22, &c.d2h);
      c.gain.known = q.columnInt(27) != 0;
      c.gain.note = q.columnText(28);
      c.gain.policy = q.columnText(29);
      c.gain.allocMode = q.columnText(30);
      c.gain.standardNs = q.columnDouble(31);
      c.gain.optimizedNs = q.columnDouble(32);
      c.allocatedBeforeOpenCL = q.columnInt(33) != 0;
      c.leadNs = asUnsigned(q.columnInt(34));
      p.candidates.push_back(std::move(c));
    }
    if (st != DbStatement::Step::Done) return fail(error, "loading candidate sites", q.error());
  }
  {
    DbStatement q(db,
                  "SELECT rank, module, build_id, module_offset FROM app_site_frames WHERE "
                  "profile_id=? ORDER BY rank, depth");
    q.bind(1, lookup->id);
    DbStatement::Step st;
    while ((st = q.step()) == DbStatement::Step::Row) {
      int64_t rank = q.columnInt(0);
      if (rank < 0 || static_cast<size_t>(rank) >= p.candidates.size())
        return fail(error, "loading site frames", "frame of a missing site");
      p.candidates[rank].frames.push_back(
          ModulePc{q.columnText(1), q.columnText(2), asUnsigned(q.columnInt(3)), true});
    }
    if (st != DbStatement::Step::Done) return fail(error, "loading site frames", q.error());
  }
  {
    DbStatement q(db,
                  "SELECT kind, what, module, region_bytes, h2d_transfers, h2d_bytes, h2d_typical, "
                  "h2d_max, h2d_ns, d2h_transfers, d2h_bytes, d2h_typical, d2h_max, d2h_ns, "
                  "module_key, module_offset, map_bytes, anonymous, gain_known, gain_note, "
                  "standard_ns, optimized_ns FROM app_untracked WHERE profile_id=? ORDER BY rank");
    q.bind(1, lookup->id);
    DbStatement::Step st;
    while ((st = q.step()) == DbStatement::Step::Row) {
      UntrackedMemory u;
      std::string kind = q.columnText(0);
      for (auto k : {UntrackedMemory::Kind::Static, UntrackedMemory::Kind::Stack,
                     UntrackedMemory::Kind::Mmap, UntrackedMemory::Kind::Heap})
        if (kind == untrackedKindName(k)) u.kind = k;
      u.what = q.columnText(1);
      u.modulePath = q.columnText(2);
      u.regionBytes = asUnsigned(q.columnInt(3));
      readTransfers(q, 4, &u.h2d);
      readTransfers(q, 9, &u.d2h);
      u.moduleKey = asUnsigned(q.columnInt(14));
      u.moduleOffset = asUnsigned(q.columnInt(15));
      u.mapBytes = asUnsigned(q.columnInt(16));
      u.anonymous = q.columnInt(17) != 0;
      u.gain.known = q.columnInt(18) != 0;
      u.gain.note = q.columnText(19);
      u.gain.standardNs = q.columnDouble(20);
      u.gain.optimizedNs = q.columnDouble(21);
      if (u.gain.known) u.gain.policy = "register";
      p.untracked.push_back(std::move(u));
    }
    if (st != DbStatement::Step::Done) return fail(error, "loading untracked memory", q.error());
  }
  for (size_t r = 0; r < p.candidates.size(); ++r) {
    if (!loadSizes(db, lookup->id, "site", static_cast<int>(r), "h2d", &p.candidates[r].h2d, error) ||
        !loadSizes(db, lookup->id, "site", static_cast<int>(r), "d2h", &p.candidates[r].d2h, error))
      return false;
  }
  for (size_t r = 0; r < p.untracked.size(); ++r) {
    if (!loadSizes(db, lookup->id, "untracked", static_cast<int>(r), "h2d", &p.untracked[r].h2d, error) ||
        !loadSizes(db, lookup->id, "untracked", static_cast<int>(r), "d2h", &p.untracked[r].d2h, error))
      return false;
  }
  lookup->status = ProfileLookup::Status::Found;
  *out = std::move(p);
  return true;
}

bool storeRunBreakdown(Db& db, int64_t profileId, const BreakdownBar& bar, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbStatement s(db,
                "INSERT OR REPLACE INTO app_run_breakdowns (profile_id, label, total_ns, "
                "kernel_ns, comm_part_ns, cpu_sync_ns) VALUES (?,?,?,?,?,?)");
  s.bind(1, profileId).bind(2, bar.label).bind(3, bar.breakdown.totalNs);
  s.bind(4, bar.breakdown.kernelNs).bind(5, bar.breakdown.communicationNs);
  s.bind(6, bar.breakdown.cpuSyncNs);
  return s.run() || fail(error, "storing a run breakdown", s.error());
}

bool loadRunBreakdowns(Db& db, int64_t profileId, std::vector<BreakdownBar>* out,
                       std::string* error) {
  out->clear();
  bool exist = false;
  if (!tablesExist(db, &exist, error)) return false;
  if (!exist) return true;
  DbStatement q(db,
                "SELECT label, total_ns, kernel_ns, comm_part_ns, cpu_sync_ns FROM "
                "app_run_breakdowns WHERE profile_id=? AND wall_ns=0 ORDER BY label DESC");  // standard first
  q.bind(1, profileId);
  DbStatement::Step st;
  while ((st = q.step()) == DbStatement::Step::Row) {
    BreakdownBar b;
    b.label = q.columnText(0);
    b.breakdown.totalNs = q.columnDouble(1);
    b.breakdown.kernelNs = q.columnDouble(2);
    b.breakdown.communicationNs = q.columnDouble(3);
    b.breakdown.cpuSyncNs = q.columnDouble(4);
    out->push_back(std::move(b));
  }
  return st == DbStatement::Step::Done || fail(error, "loading run breakdowns", q.error());
}

bool storeRun(Db& db, int64_t profileId, const StoredRun& run, size_t keep, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbTransaction tx(db, error);
  if (!tx.ok()) return false;
  const RunRecord& r = run.record;
  {
    DbStatement del(db, "DELETE FROM app_run_breakdowns WHERE profile_id=? AND label=?");
    del.bind(1, profileId).bind(2, run.bar.label);
    if (!del.run()) return fail(error, "replacing a run", del.error());
  }
  if (!storeRunBreakdown(db, profileId, run.bar, error)) return false;
  {
    DbStatement s(db,
                  "UPDATE app_run_breakdowns SET started_ns=?, pid=?, wall_ns=?, plan_id=?, "
                  "predicted_saving_ns=?, pinned_transfers=?, pinned_bytes=?, pageable_transfers=?, "
                  "pageable_bytes=?, other_transfers=?, other_bytes=?, writer=? "
                  "WHERE profile_id=? AND label=?");
    s.bind(1, asInt(r.startedUnixNs)).bind(2, asInt(r.pid)).bind(3, asInt(r.wallNs));
    s.bind(4, asInt(r.planId)).bind(5, r.predictedSavingNs).bind(6, asInt(r.pinned));
    s.bind(7, asInt(r.pinnedBytes)).bind(8, asInt(r.pageable)).bind(9, asInt(r.pageableBytes));
    s.bind(10, asInt(r.other)).bind(11, asInt(r.otherBytes)).bind(12, r.writer);
    s.bind(13, profileId).bind(14, run.bar.label);
    if (!s.run()) return fail(error, "storing a run", s.error());
  }
  for (const RunSiteCounts& c : r.sites) {
    DbStatement s(db,
                  "INSERT OR REPLACE INTO app_run_sites (profile_id, label, site_key, transfers, "
                  "bytes, pinned, pageable) VALUES (?,?,?,?,?,?,?)");
    s.bind(1, profileId).bind(2, run.bar.label).bind(3, asInt(c.key)).bind(4, asInt(c.transfers));
    s.bind(5, asInt(c.bytes)).bind(6, asInt(c.pinned)).bind(7, asInt(c.pageable));
    if (!s.run()) return fail(error, "storing a run's sites", s.error());
  }
  {
    DbStatement prune(db,
                      "DELETE FROM app_run_breakdowns WHERE profile_id=? AND wall_ns>0 AND label NOT IN "
                      "(SELECT label FROM app_run_breakdowns WHERE profile_id=? AND wall_ns>0 "
                      "ORDER BY started_ns DESC LIMIT ?)");
    prune.bind(1, profileId).bind(2, profileId).bind(3, static_cast<int64_t>(keep));
    if (!prune.run()) return fail(error, "pruning old runs", prune.error());
  }
  return tx.commit(error);
}

bool loadRuns(Db& db, int64_t profileId, std::vector<StoredRun>* out, std::string* error) {
  out->clear();
  bool exist = false;
  if (!tablesExist(db, &exist, error)) return false;
  if (!exist) return true;
  DbStatement q(db,
                "SELECT label, total_ns, kernel_ns, comm_part_ns, cpu_sync_ns, started_ns, pid, "
                "wall_ns, plan_id, predicted_saving_ns, pinned_transfers, pinned_bytes, "
                "pageable_transfers, pageable_bytes, other_transfers, other_bytes, writer "
                "FROM app_run_breakdowns WHERE profile_id=? AND wall_ns>0 ORDER BY started_ns");
  q.bind(1, profileId);
  DbStatement::Step st;
  while ((st = q.step()) == DbStatement::Step::Row) {
    StoredRun run;
    run.bar.label = q.columnText(0);
    Breakdown& b = run.bar.breakdown;
    b.totalNs = q.columnDouble(1);
    b.kernelNs = q.columnDouble(2);
    b.communicationNs = q.columnDouble(3);
    b.cpuSyncNs = q.columnDouble(4);
    RunRecord& r = run.record;
    uint64_t* fields[] = {&r.startedUnixNs, &r.pid, &r.wallNs, &r.planId};
    for (int i = 0; i < 4; ++i) *fields[i] = asUnsigned(q.columnInt(5 + i));
    r.predictedSavingNs = q.columnDouble(9);
    uint64_t* counts[] = {&r.pinned, &r.pinnedBytes, &r.pageable, &r.pageableBytes, &r.other, &r.otherBytes};
    for (int i = 0; i < 6; ++i) *counts[i] = asUnsigned(q.columnInt(10 + i));
    r.writer = q.columnText(16);
    out->push_back(std::move(run));
  }
  if (st != DbStatement::Step::Done) return fail(error, "loading runs", q.error());
  if (!tablesExist(db, &exist, error, "app_run_sites")) return false;
  for (StoredRun& run : *out) {
    if (!exist) break;
    DbStatement s(db,
                  "SELECT site_key, transfers, bytes, pinned, pageable FROM app_run_sites "
                  "WHERE profile_id=? AND label=? ORDER BY site_key");
    s.bind(1, profileId).bind(2, run.bar.label);
    while ((st = s.step()) == DbStatement::Step::Row)
      run.record.sites.push_back({asUnsigned(s.columnInt(0)), asUnsigned(s.columnInt(1)),
                                  asUnsigned(s.columnInt(2)), asUnsigned(s.columnInt(3)),
                                  asUnsigned(s.columnInt(4))});
    if (st != DbStatement::Step::Done) return fail(error, "loading a run's sites", s.error());
  }
  return true;
}

bool storeLauncher(Db& db, const LauncherRecord& rec, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbTransaction tx(db, error);
  if (!tx.ok()) return false;
  {
    DbStatement del(db, isNamedPath(rec.launcherPath)
                            ? "DELETE FROM app_launchers WHERE launcher_path=?1"
                            : "DELETE FROM app_launchers WHERE launcher_path=?1 AND launcher_key=?2");
    del.bind(1, rec.launcherPath);
    if (!isNamedPath(rec.launcherPath)) del.bind(2, rec.launcherKey);
    if (!del.run()) return fail(error, "replacing the launcher record", del.error());
  }
  DbStatement s(db, "INSERT INTO app_launchers (launcher_path, launcher_key, created_utc) VALUES (?,?,?)");
  s.bind(1, rec.launcherPath).bind(2, rec.launcherKey).bind(3, rec.createdUtc);
  if (!s.run()) return fail(error, "storing the launcher record", s.error());
  const int64_t id = db.lastInsertRowId();
  DbStatement child(db,
                    "INSERT INTO app_launched (launcher_id, idx, pid, program_path, program_key, "
                    "description) VALUES (?,?,?,?,?,?)");
  for (size_t i = 0; i < rec.launched.size(); ++i) {
    const LaunchedProgram& l = rec.launched[i];
    child.reset();
    child.bind(1, id).bind(2, static_cast<int64_t>(i)).bind(3, asInt(l.pid));
    child.bind(4, l.profilePath).bind(5, l.key).bind(6, l.description);
    if (!child.run()) return fail(error, "storing a launched program", child.error());
  }
  return tx.commit(error);
}

bool loadLauncher(Db& db, const std::string& path, const std::string& key, LauncherRecord* out,
                  bool* found, std::string* error) {
  *found = false;
  bool exist = false;
  if (!tablesExist(db, &exist, error, "app_launchers")) return false;
  if (!exist) return true;
  DbStatement q(db, isNamedPath(path)
                        ? "SELECT id, launcher_key, created_utc FROM app_launchers WHERE "
                          "launcher_path=?1 ORDER BY id DESC LIMIT 1"
                        : "SELECT id, launcher_key, created_utc FROM app_launchers WHERE "
                          "launcher_path=?1 AND launcher_key=?2");
  q.bind(1, path);
  if (!isNamedPath(path)) q.bind(2, key);
  DbStatement::Step st = q.step();
  if (st == DbStatement::Step::Error) return fail(error, "looking up the launcher", q.error());
  if (st == DbStatement::Step::Done) return true;
  LauncherRecord rec;
  rec.launcherPath = path;
  rec.launcherKey = q.columnText(1);
  rec.createdUtc = q.columnText(2);
  DbStatement c(db,
                "SELECT pid, program_path, program_key, description FROM app_launched WHERE "
                "launcher_id=? ORDER BY idx");
  c.bind(1, q.columnInt(0));
  while ((st = c.step()) == DbStatement::Step::Row)
    rec.launched.push_back({asUnsigned(c.columnInt(0)), c.columnText(1), c.columnText(2), c.columnText(3)});
  if (st != DbStatement::Step::Done) return fail(error, "loading launched programs", c.error());
  *out = std::move(rec);
  *found = true;
  return true;
}

}  // namespace hetopt::analyzer
