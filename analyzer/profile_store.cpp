// SPDX-License-Identifier: MIT
/** @file Storing and loading application profiles; see profile_store.h and docs/DB.md.
 * Each app_* table's columns filled by a field list (store/db_row.h). */
#include "analyzer/profile_store.h"

#include <cmath>

#include "contracts/db_schema.h"
#include "store/db_row.h"

namespace hetopt::analyzer {
namespace {

// Which member fills which column, per table (the columns: contracts/db_schema.cpp). Row ids,
// ranks and other keys are bound by the code that stores the row.
#define FIELD HETOPT_DB_FIELD
#define TRANSFER_FIELDS(T, dir)                                                         \
  FIELD(T, #dir "_transfers", dir.transfers), FIELD(T, #dir "_bytes", dir.bytes),       \
      FIELD(T, #dir "_typical", dir.typicalBytes), FIELD(T, #dir "_max", dir.maxBytes), \
      FIELD(T, #dir "_ns", dir.deviceNs)

/// Named profiles ("@NAME") hold one profile per name, whatever program it was traced from.
bool isNamedPath(const std::string& path) { return !path.empty() && path[0] == '@'; }

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

const DbField<AppProfile> kProfileFields[] = {
    // The stored path is profilePath() ("@NAME" for a named profile); rows from before schema 5
    // have no executable: their path is the executable's (read before `executable`).
    {"program_path",
     [](DbStatement& s, int i, const AppProfile& p) { s.bind(i, p.program.profilePath()); },
     [](const DbStatement& q, int i, AppProfile* p) {
       const std::string stored = q.columnText(i);
       if (isNamedPath(stored)) p->program.profileName = stored.substr(1);
       p->program.path = stored;
       return true;
     }},
    {"executable", [](DbStatement& s, int i, const AppProfile& p) { s.bind(i, p.program.path); },
     [](const DbStatement& q, int i, AppProfile* p) {
       if (!q.columnText(i).empty()) p->program.path = q.columnText(i);
       return true;
     }},
    {"program_key", [](DbStatement& s, int i, const AppProfile& p) { s.bind(i, p.program.key()); },
     [](const DbStatement&, int, AppProfile*) { return true; }},  // looked up by, not loaded
    FIELD(AppProfile, "build_id", program.buildId),
    FIELD(AppProfile, "content_hash", program.contentHash),
    {"script_kind",
     [](DbStatement& s, int i, const AppProfile& p) {
       s.bind(i, int64_t{static_cast<int>(p.program.script.kind)});
     },
     [](const DbStatement& q, int i, AppProfile* p) {
       const int64_t kind = q.columnInt(i);
       if (kind > 0 && kind <= static_cast<int64_t>(ScriptRef::Kind::Code))
         p->program.script.kind = static_cast<ScriptRef::Kind>(kind);
       return true;
     }},
    FIELD(AppProfile, "script", program.script.name),
    FIELD(AppProfile, "script_hash", program.script.hash),
    FIELD(AppProfile, "device", device),
    FIELD(AppProfile, "trace_file", traceFile),
    FIELD(AppProfile, "created_utc", createdUtc),
    FIELD(AppProfile, "hetopt_version", hetoptVersion),
    FIELD(AppProfile, "eligible", eligibility.eligible),
    // An infinite ratio (no kernel time) is stored as NULL: SQLite has no infinity literal.
    {"ratio",
     [](DbStatement& s, int i, const AppProfile& p) {
       if (std::isfinite(p.eligibility.ratio))
         s.bind(i, p.eligibility.ratio);
       else
         s.bindNull(i);
     },
     [](const DbStatement& q, int i, AppProfile* p) {
       p->eligibility.ratio = q.columnIsNull(i) ? HUGE_VAL : q.columnDouble(i);
       return true;
     }},
    FIELD(AppProfile, "threshold", eligibility.threshold),
    FIELD(AppProfile, "communication_ns", eligibility.communicationNs),
    FIELD(AppProfile, "computation_ns", eligibility.computationNs),
    FIELD(AppProfile, "reason", eligibility.reason),
    FIELD(AppProfile, "has_device_times", breakdown.hasDeviceTimes),
    FIELD(AppProfile, "total_ns", breakdown.totalNs),
    FIELD(AppProfile, "kernel_ns", breakdown.kernelNs),
    FIELD(AppProfile, "comm_part_ns", breakdown.communicationNs),
    FIELD(AppProfile, "cpu_sync_ns", breakdown.cpuSyncNs),
    FIELD(AppProfile, "h2d_ns", breakdown.h2dNs),
    FIELD(AppProfile, "d2h_ns", breakdown.d2hNs),
    FIELD(AppProfile, "launch_ns", breakdown.launchNs),
    FIELD(AppProfile, "dispatch_sync_ns", breakdown.dispatchSyncNs),
    FIELD(AppProfile, "kernels", breakdown.kernels),
    FIELD(AppProfile, "recording_ns", breakdown.recordingNs),
    FIELD(AppProfile, "host_only_sites", hostOnlySites),
    FIELD(AppProfile, "host_only_allocations", hostOnlyAllocations),
    FIELD(AppProfile, "tracked_allocations", trackedAllocations),
    {"warnings",
     [](DbStatement& s, int i, const AppProfile& p) { s.bind(i, joinLines(p.warnings)); },
     [](const DbStatement& q, int i, AppProfile* p) {
       p->warnings = splitLines(q.columnText(i));
       return true;
     }},
    FIELD(AppProfile, "contexts", contextsCreated),
    FIELD(AppProfile, "first_context_devices", firstContextDevices),
    FIELD(AppProfile, "first_call_ns", startup.firstCallNs),
    FIELD(AppProfile, "first_context_ns", startup.firstContextNs),
    FIELD(AppProfile, "enumerate_ns", startup.enumerateNs),
    FIELD(AppProfile, "context_ns", startup.contextNs),
    FIELD(AppProfile, "build_ns", startup.buildNs),
    FIELD(AppProfile, "first_build_ns", startup.firstBuildNs),
    FIELD(AppProfile, "forked_children", forkedChildren),
};

const DbField<CandidateSite> kSiteFields[] = {
    FIELD(CandidateSite, "site_key", siteKey),
    FIELD(CandidateSite, "has_source", location.hasSource),
    FIELD(CandidateSite, "function", location.source.function),
    FIELD(CandidateSite, "file", location.source.file),
    FIELD(CandidateSite, "line", location.source.line),
    FIELD(CandidateSite, "module", location.modulePath),
    FIELD(CandidateSite, "module_offset", location.offset),
    FIELD(CandidateSite, "location_note", location.note),
    FIELD(CandidateSite, "allocator", allocator),
    FIELD(CandidateSite, "allocations", allocations),
    FIELD(CandidateSite, "feeding_allocations", feedingAllocations),
    FIELD(CandidateSite, "min_alloc_bytes", minAllocBytes),
    FIELD(CandidateSite, "max_alloc_bytes", maxAllocBytes),
    FIELD(CandidateSite, "typical_alloc_bytes", typicalAllocBytes),
    FIELD(CandidateSite, "peak_live_bytes", peakLiveBytes),
    FIELD(CandidateSite, "peak_live_blocks", peakLiveBlocks),
    TRANSFER_FIELDS(CandidateSite, h2d),
    TRANSFER_FIELDS(CandidateSite, d2h),
    FIELD(CandidateSite, "gain_known", gain.known),
    FIELD(CandidateSite, "gain_note", gain.note),
    FIELD(CandidateSite, "policy", gain.policy),
    FIELD(CandidateSite, "alloc_mode", gain.allocMode),
    FIELD(CandidateSite, "standard_ns", gain.standardNs),
    FIELD(CandidateSite, "optimized_ns", gain.optimizedNs),
    FIELD(CandidateSite, "allocated_before_opencl", allocatedBeforeOpenCL),
    FIELD(CandidateSite, "lead_ns", leadNs),
};

const DbField<ModulePc> kFrameFields[] = {
    FIELD(ModulePc, "module", modulePath),
    FIELD(ModulePc, "build_id", buildId),
    FIELD(ModulePc, "module_offset", offset),
};

const DbField<TransferStats::SizeCount> kSizeFields[] = {
    FIELD(TransferStats::SizeCount, "bytes", bytes),
    FIELD(TransferStats::SizeCount, "count", count),
};

const DbField<UntrackedMemory> kUntrackedFields[] = {
    {"kind",
     [](DbStatement& s, int i, const UntrackedMemory& u) {
       s.bind(i, std::string(untrackedKindName(u.kind)));
     },
     [](const DbStatement& q, int i, UntrackedMemory* u) {
       const std::string kind = q.columnText(i);
       for (auto k : {UntrackedMemory::Kind::Static, UntrackedMemory::Kind::Stack,
                      UntrackedMemory::Kind::Mmap, UntrackedMemory::Kind::Heap})
         if (kind == untrackedKindName(k)) u->kind = k;
       return true;
     }},
    FIELD(UntrackedMemory, "what", what),
    FIELD(UntrackedMemory, "module", modulePath),
    FIELD(UntrackedMemory, "region_bytes", regionBytes),
    TRANSFER_FIELDS(UntrackedMemory, h2d),
    TRANSFER_FIELDS(UntrackedMemory, d2h),
    FIELD(UntrackedMemory, "module_key", moduleKey),
    FIELD(UntrackedMemory, "module_offset", moduleOffset),
    FIELD(UntrackedMemory, "map_bytes", mapBytes),
    FIELD(UntrackedMemory, "anonymous", anonymous),
    FIELD(UntrackedMemory, "gain_known", gain.known),
    FIELD(UntrackedMemory, "gain_note", gain.note),
    FIELD(UntrackedMemory, "standard_ns", gain.standardNs),
    FIELD(UntrackedMemory, "optimized_ns", gain.optimizedNs),
};

const DbField<LauncherRecord> kLauncherFields[] = {
    FIELD(LauncherRecord, "launcher_path", launcherPath),
    FIELD(LauncherRecord, "launcher_key", launcherKey),
    FIELD(LauncherRecord, "created_utc", createdUtc),
};

const DbField<LaunchedProgram> kLaunchedFields[] = {
    FIELD(LaunchedProgram, "pid", pid),
    FIELD(LaunchedProgram, "program_path", profilePath),
    FIELD(LaunchedProgram, "program_key", key),
    FIELD(LaunchedProgram, "description", description),
};

// A bar stored by storeRunBreakdown has no record: its record columns keep their zeros.
const DbField<StoredRun> kRunFields[] = {
    FIELD(StoredRun, "label", bar.label),
    FIELD(StoredRun, "total_ns", bar.breakdown.totalNs),
    FIELD(StoredRun, "kernel_ns", bar.breakdown.kernelNs),
    FIELD(StoredRun, "comm_part_ns", bar.breakdown.communicationNs),
    FIELD(StoredRun, "cpu_sync_ns", bar.breakdown.cpuSyncNs),
    FIELD(StoredRun, "started_ns", record.startedUnixNs),
    FIELD(StoredRun, "pid", record.pid),
    FIELD(StoredRun, "wall_ns", record.wallNs),
    FIELD(StoredRun, "plan_id", record.planId),
    FIELD(StoredRun, "predicted_saving_ns", record.predictedSavingNs),
    FIELD(StoredRun, "pinned_transfers", record.pinned),
    FIELD(StoredRun, "pinned_bytes", record.pinnedBytes),
    FIELD(StoredRun, "pageable_transfers", record.pageable),
    FIELD(StoredRun, "pageable_bytes", record.pageableBytes),
    FIELD(StoredRun, "other_transfers", record.other),
    FIELD(StoredRun, "other_bytes", record.otherBytes),
    FIELD(StoredRun, "writer", record.writer),
    FIELD(StoredRun, "exit_status", record.exitStatus),
    FIELD(StoredRun, "signal", record.signal),
    FIELD(StoredRun, "ledger_seq", record.seq),
    FIELD(StoredRun, "note", record.note),
    {"kind",
     [](DbStatement& s, int i, const StoredRun& r) {
       s.bind(i, std::string(runKindName(r.record.kind)));
     },
     // A name this hetopt does not know reads as optimized, as rows from before kinds did.
     [](const DbStatement& q, int i, StoredRun* r) {
       parseRunKind(q.columnText(i), &r->record.kind);
       return true;
     }},
};

const DbField<RunSiteCounts> kRunSiteFields[] = {
    FIELD(RunSiteCounts, "site_key", key),      FIELD(RunSiteCounts, "transfers", transfers),
    FIELD(RunSiteCounts, "bytes", bytes),       FIELD(RunSiteCounts, "pinned", pinned),
    FIELD(RunSiteCounts, "pageable", pageable),
};

#undef TRANSFER_FIELDS
#undef FIELD

const DbTable& table(const char* name) { return *dbTable(name); }

bool storeSizes(Db& db, int64_t profileId, const char* owner, int rank, const char* direction,
                const TransferStats& t, std::string* error) {
  DbStatement s(db, table("app_transfer_sizes").insertSql().c_str());
  for (size_t i = 0; i < t.sizes.size() && i < TransferStats::kStoredSizes; ++i) {
    s.reset();
    s.bind(s.parameterIndex(":profile_id"), profileId)
        .bind(s.parameterIndex(":owner"), std::string(owner));
    s.bind(s.parameterIndex(":owner_rank"), int64_t{rank});
    s.bind(s.parameterIndex(":direction"), std::string(direction));
    s.bind(s.parameterIndex(":idx"), static_cast<int64_t>(i));
    if (!dbStoreRow<TransferStats::SizeCount>(s, kSizeFields, t.sizes[i], "storing transfer sizes",
                                              error))
      return false;
  }
  return true;
}

bool loadSizes(Db& db, int64_t profileId, const char* owner, int rank, const char* direction,
               TransferStats* t, std::string* error) {
  const DbTable& sizes = table("app_transfer_sizes");
  DbStatement q(db,
                sizes
                    .selectSql("WHERE profile_id=? AND owner=? AND owner_rank=? AND direction=? "
                               "ORDER BY idx")
                    .c_str());
  q.bind(1, profileId).bind(2, std::string(owner)).bind(3, int64_t{rank});
  q.bind(4, std::string(direction));
  return dbLoadRows<TransferStats::SizeCount>(q, sizes, kSizeFields, &t->sizes,
                                              "loading transfer sizes", error);
}

/// Binds the (profile_id, rank) keys of a profile's child row.
void bindRank(DbStatement& s, int64_t profileId, size_t rank) {
  s.reset();
  s.bind(s.parameterIndex(":profile_id"), profileId)
      .bind(s.parameterIndex(":rank"), static_cast<int64_t>(rank));
}

/// The rows of app_run_breakdowns of `profileId` that `filter` (after the profile) picks.
bool loadRunRows(Db& db, int64_t profileId, const char* filter, std::vector<StoredRun>* out,
                 std::string* error) {
  bool exist = false;
  if (!db.hasTable("app_profiles", &exist, error)) return false;
  if (!exist) return true;
  const DbTable& runs = table("app_run_breakdowns");
  DbStatement q(db, runs.selectSql(std::string("WHERE profile_id=? ") + filter).c_str());
  q.bind(1, profileId);
  return dbLoadRows<StoredRun>(q, runs, kRunFields, out, "loading runs", error);
}

}  // namespace

bool ensureProfileTables(Db& db, std::string* error) {
  std::string err;
  if (!db.exec(createTablesSql(appTables()), &err))
    return dbFail(error, "creating the profile tables in " + db.path(), err);
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
    if (!del.run()) return dbFail(error, "replacing the profile", del.error());
  }
  DbStatement s(db, table("app_profiles").insertSql().c_str());
  if (!dbStoreRow<AppProfile>(s, kProfileFields, p, "storing the profile", error)) return false;
  const int64_t id = db.lastInsertRowId();
  DbStatement site(db, table("app_sites").insertSql().c_str());
  DbStatement frame(db, table("app_site_frames").insertSql().c_str());
  for (size_t r = 0; r < p.candidates.size(); ++r) {
    const CandidateSite& c = p.candidates[r];
    bindRank(site, id, r);
    if (!dbStoreRow<CandidateSite>(site, kSiteFields, c, "storing a candidate site", error))
      return false;
    for (size_t d = 0; d < c.frames.size(); ++d) {
      bindRank(frame, id, r);
      frame.bind(frame.parameterIndex(":depth"), static_cast<int64_t>(d));
      if (!dbStoreRow<ModulePc>(frame, kFrameFields, c.frames[d], "storing a site frame", error))
        return false;
    }
    if (!storeSizes(db, id, "site", static_cast<int>(r), "h2d", c.h2d, error) ||
        !storeSizes(db, id, "site", static_cast<int>(r), "d2h", c.d2h, error))
      return false;
  }
  DbStatement un(db, table("app_untracked").insertSql().c_str());
  for (size_t r = 0; r < p.untracked.size(); ++r) {
    const UntrackedMemory& u = p.untracked[r];
    bindRank(un, id, r);
    if (!dbStoreRow<UntrackedMemory>(un, kUntrackedFields, u, "storing untracked memory", error))
      return false;
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
  if (!db.hasTable("app_profiles", &exist, error)) return false;
  if (!exist) return true;
  {
    // Newest first: the stale case names the most recent other build.
    DbStatement q(db,
                  "SELECT id, program_key, created_utc FROM app_profiles WHERE program_path=? "
                  "ORDER BY (program_key = ?) DESC, id DESC LIMIT 1");
    q.bind(1, path).bind(2, key);
    DbStatement::Step st = q.step();
    if (st == DbStatement::Step::Error) return dbFail(error, "looking up the profile", q.error());
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
    const DbTable& profiles = table("app_profiles");
    DbStatement q(db, profiles.selectSql("WHERE id=?").c_str());
    q.bind(1, lookup->id);
    if (q.step() != DbStatement::Step::Row) return dbFail(error, "loading the profile", q.error());
    std::string why;
    if (!dbReadRow<AppProfile>(q, profiles, kProfileFields, &p, &why))
      return dbFail(error, "loading the profile", why);
    // A script's name and hash count only with a known kind (as ProgramIdentity makes them).
    if (p.program.script.kind == ScriptRef::Kind::None) p.program.script = ScriptRef{};
  }
  {
    const DbTable& sites = table("app_sites");
    DbStatement q(db, sites.selectSql("WHERE profile_id=? ORDER BY rank").c_str());
    q.bind(1, lookup->id);
    if (!dbLoadRows<CandidateSite>(q, sites, kSiteFields, &p.candidates, "loading candidate sites",
                                   error))
      return false;
  }
  {
    const DbTable& frames = table("app_site_frames");
    DbStatement q(db, frames.selectSql("WHERE profile_id=? ORDER BY rank, depth").c_str());
    q.bind(1, lookup->id);
    const int rankColumn = frames.columnIndex("rank");
    DbStatement::Step st;
    std::string why;
    while ((st = q.step()) == DbStatement::Step::Row) {
      int64_t rank = q.columnInt(rankColumn);
      if (rank < 0 || static_cast<size_t>(rank) >= p.candidates.size())
        return dbFail(error, "loading site frames", "frame of a missing site");
      ModulePc pc;
      if (!dbReadRow<ModulePc>(q, frames, kFrameFields, &pc, &why))
        return dbFail(error, "loading site frames", why);
      p.candidates[rank].frames.push_back(std::move(pc));
    }
    if (st != DbStatement::Step::Done) return dbFail(error, "loading site frames", q.error());
  }
  {
    const DbTable& untracked = table("app_untracked");
    DbStatement q(db, untracked.selectSql("WHERE profile_id=? ORDER BY rank").c_str());
    q.bind(1, lookup->id);
    if (!dbLoadRows<UntrackedMemory>(q, untracked, kUntrackedFields, &p.untracked,
                                     "loading untracked memory", error))
      return false;
    for (UntrackedMemory& u : p.untracked)
      if (u.gain.known) u.gain.policy = "register";
  }
  for (size_t r = 0; r < p.candidates.size(); ++r) {
    if (!loadSizes(db, lookup->id, "site", static_cast<int>(r), "h2d", &p.candidates[r].h2d,
                   error) ||
        !loadSizes(db, lookup->id, "site", static_cast<int>(r), "d2h", &p.candidates[r].d2h, error))
      return false;
  }
  for (size_t r = 0; r < p.untracked.size(); ++r) {
    if (!loadSizes(db, lookup->id, "untracked", static_cast<int>(r), "h2d", &p.untracked[r].h2d,
                   error) ||
        !loadSizes(db, lookup->id, "untracked", static_cast<int>(r), "d2h", &p.untracked[r].d2h,
                   error))
      return false;
  }
  lookup->status = ProfileLookup::Status::Found;
  *out = std::move(p);
  return true;
}

bool storeRunBreakdown(Db& db, int64_t profileId, const BreakdownBar& bar, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbStatement s(db, table("app_run_breakdowns").insertSql(true).c_str());
  s.bind(s.parameterIndex(":profile_id"), profileId);
  return dbStoreRow<StoredRun>(s, kRunFields, StoredRun{bar, {}}, "storing a run breakdown", error);
}

bool loadRunBreakdowns(Db& db, int64_t profileId, std::vector<BreakdownBar>* out,
                       std::string* error) {
  out->clear();
  std::vector<StoredRun> runs;
  // Bars without a record (wall_ns 0); "standard" sorts before "optimized".
  if (!loadRunRows(db, profileId, "AND wall_ns=0 ORDER BY label DESC", &runs, error)) return false;
  for (StoredRun& r : runs) out->push_back(std::move(r.bar));
  return true;
}

bool storeRun(Db& db, int64_t profileId, const StoredRun& run, size_t keep, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbTransaction tx(db, error);
  if (!tx.ok()) return false;
  {
    // Cascades to the run's sites.
    DbStatement del(db, "DELETE FROM app_run_breakdowns WHERE profile_id=? AND label=?");
    del.bind(1, profileId).bind(2, run.bar.label);
    if (!del.run()) return dbFail(error, "replacing a run", del.error());
  }
  {
    DbStatement s(db, table("app_run_breakdowns").insertSql(true).c_str());
    s.bind(s.parameterIndex(":profile_id"), profileId);
    if (!dbStoreRow<StoredRun>(s, kRunFields, run, "storing a run", error)) return false;
  }
  DbStatement site(db, table("app_run_sites").insertSql(true).c_str());
  for (const RunSiteCounts& c : run.record.sites) {
    site.reset();
    site.bind(site.parameterIndex(":profile_id"), profileId)
        .bind(site.parameterIndex(":label"), run.bar.label);
    if (!dbStoreRow<RunSiteCounts>(site, kRunSiteFields, c, "storing a run's sites", error))
      return false;
  }
  {
    DbStatement prune(
        db,
        "DELETE FROM app_run_breakdowns WHERE profile_id=?1 AND wall_ns>0 AND kind=?2 AND "
        "label NOT IN (SELECT label FROM app_run_breakdowns WHERE profile_id=?1 AND "
        "wall_ns>0 AND kind=?2 ORDER BY started_ns DESC LIMIT ?3)");
    prune.bind(1, profileId)
        .bind(2, std::string(runKindName(run.record.kind)))
        .bind(3, static_cast<int64_t>(keep));
    if (!prune.run()) return dbFail(error, "pruning old runs", prune.error());
  }
  return tx.commit(error);
}

bool loadRuns(Db& db, int64_t profileId, std::vector<StoredRun>* out, std::string* error) {
  out->clear();
  if (!loadRunRows(db, profileId, "AND wall_ns>0 ORDER BY started_ns", out, error)) return false;
  if (out->empty()) return true;
  bool exist = false;
  if (!db.hasTable("app_run_sites", &exist, error)) return false;
  if (!exist) return true;
  const DbTable& sites = table("app_run_sites");
  for (StoredRun& run : *out) {
    DbStatement s(db, sites.selectSql("WHERE profile_id=? AND label=? ORDER BY site_key").c_str());
    s.bind(1, profileId).bind(2, run.bar.label);
    if (!dbLoadRows<RunSiteCounts>(s, sites, kRunSiteFields, &run.record.sites,
                                   "loading a run's sites", error))
      return false;
  }
  return true;
}

bool storeLauncher(Db& db, const LauncherRecord& rec, std::string* error) {
  if (!ensureProfileTables(db, error)) return false;
  DbTransaction tx(db, error);
  if (!tx.ok()) return false;
  {
    DbStatement del(db,
                    isNamedPath(rec.launcherPath)
                        ? "DELETE FROM app_launchers WHERE launcher_path=?1"
                        : "DELETE FROM app_launchers WHERE launcher_path=?1 AND launcher_key=?2");
    del.bind(1, rec.launcherPath);
    if (!isNamedPath(rec.launcherPath)) del.bind(2, rec.launcherKey);
    if (!del.run()) return dbFail(error, "replacing the launcher record", del.error());
  }
  DbStatement s(db, table("app_launchers").insertSql().c_str());
  if (!dbStoreRow<LauncherRecord>(s, kLauncherFields, rec, "storing the launcher record", error))
    return false;
  const int64_t id = db.lastInsertRowId();
  DbStatement child(db, table("app_launched").insertSql().c_str());
  for (size_t i = 0; i < rec.launched.size(); ++i) {
    child.reset();
    child.bind(child.parameterIndex(":launcher_id"), id)
        .bind(child.parameterIndex(":idx"), static_cast<int64_t>(i));
    if (!dbStoreRow<LaunchedProgram>(child, kLaunchedFields, rec.launched[i],
                                     "storing a launched program", error))
      return false;
  }
  return tx.commit(error);
}

bool loadLauncher(Db& db, const std::string& path, const std::string& key, LauncherRecord* out,
                  bool* found, std::string* error) {
  *found = false;
  bool exist = false;
  if (!db.hasTable("app_launchers", &exist, error)) return false;
  if (!exist) return true;
  const DbTable& launchers = table("app_launchers");
  DbStatement q(db,
                launchers
                    .selectSql(isNamedPath(path) ? "WHERE launcher_path=?1 ORDER BY id DESC LIMIT 1"
                                                 : "WHERE launcher_path=?1 AND launcher_key=?2")
                    .c_str());
  q.bind(1, path);
  if (!isNamedPath(path)) q.bind(2, key);
  DbStatement::Step st = q.step();
  if (st == DbStatement::Step::Error) return dbFail(error, "looking up the launcher", q.error());
  if (st == DbStatement::Step::Done) return true;
  LauncherRecord rec;
  std::string why;
  if (!dbReadRow<LauncherRecord>(q, launchers, kLauncherFields, &rec, &why))
    return dbFail(error, "looking up the launcher", why);
  rec.launcherPath = path;
  const DbTable& launched = table("app_launched");
  DbStatement c(db, launched.selectSql("WHERE launcher_id=? ORDER BY idx").c_str());
  c.bind(1, q.columnInt(launchers.columnIndex("id")));
  if (!dbLoadRows<LaunchedProgram>(c, launched, kLaunchedFields, &rec.launched,
                                   "loading launched programs", error))
    return false;
  *out = std::move(rec);
  *found = true;
  return true;
}

}  // namespace hetopt::analyzer
