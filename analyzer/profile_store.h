// SPDX-License-Identifier: MIT
/**
 * @file Application profiles in hetopt's DB (tables `analyzer_*`, docs/DB.md). A profile is stored
 * under the program's path and identity key (build id or content hash); a new analysis of the same
 * program replaces it. Looking a profile up by the current binary's identity tells "none" from
 * "stale" (a profile exists for this path, but for another build), so a rebuilt binary never
 * silently uses the old build's sites.
 */
#pragma once
#include <string>
#include <vector>

#include "analyzer/profile.h"
#include "contracts/run_record.h"
#include "store/db.h"

namespace hetopt::analyzer {

/// Creates the analyzer's tables when missing (needs a writable DB).
bool ensureProfileTables(Db& db, std::string* error);

/// Stores `profile` in one transaction, replacing the stored one with the same path and key.
/// Sets *id to its row id when given.
bool storeProfile(Db& db, const AppProfile& profile, int64_t* id, std::string* error);

struct ProfileLookup {
  enum class Status { Found, None, Stale };
  Status status = Status::None;
  int64_t id = 0;
  /// Stale, or a named profile traced from another identity (Found): the identity the stored
  /// profile was made for, and when.
  std::string storedKey, storedCreatedUtc;
};

/// The profile for the program `identity` names (under its profilePath(): "@NAME" for a named
/// one). Status None/Stale return true with *out untouched. A DB without analyzer tables has no
/// profiles. A named profile is Found whatever its key (storedKey says when it differs).
bool loadProfile(Db& db, const ProgramIdentity& identity, AppProfile* out, ProfileLookup* lookup,
                 std::string* error);
/// The same by the stored path and key (a launcher record's entries).
bool loadProfileAt(Db& db, const std::string& profilePath, const std::string& key, AppProfile* out,
                   ProfileLookup* lookup, std::string* error);

/// A program that `hetopt trace` ran and that made no OpenCL calls itself (a wrapper script, an
/// interpreter's launcher) or a named trace: which processes it started made them, each with its
/// own profile. `hetopt run` of the launcher plans for them.
struct LaunchedProgram {
  uint64_t pid = 0;         ///< when traced
  std::string profilePath;  ///< the profile's (ProgramIdentity::profilePath())
  std::string key;          ///< the process's identity key
  std::string description;  ///< ProgramIdentity::describe()
};
struct LauncherRecord {
  std::string launcherPath;  ///< profilePath() of the command given to `hetopt trace`
  std::string launcherKey;   ///< its key()
  std::string createdUtc;
  std::vector<LaunchedProgram> launched;
};
/// Replaces the record of the same launcher (for a named one, "@NAME": of the same name).
bool storeLauncher(Db& db, const LauncherRecord& record, std::string* error);
/// The record for (path, key), or for a named path the newest one whatever its key; *found false
/// when none.
bool loadLauncher(Db& db, const std::string& path, const std::string& key, LauncherRecord* out,
                  bool* found, std::string* error);

/// A breakdown of a later run of a profiled program (`hetopt run`: "standard" and "optimized"),
/// kept beside the profile for the side-by-side plot. Replaces an earlier one with the same label.
bool storeRunBreakdown(Db& db, int64_t profileId, const BreakdownBar& bar, std::string* error);
bool loadRunBreakdowns(Db& db, int64_t profileId, std::vector<BreakdownBar>* out,
                       std::string* error);

/// A run of a profiled build, from its run record (`hetopt report`): an optimized one the shim
/// wrote, or an untouched one `hetopt run --untouched` wrote; its bar in the breakdown plot and
/// what the record said (per site included).
struct StoredRun {
  BreakdownBar bar;  ///< label: "<kind> <UTC time> pid <pid>" (the row's key)
  RunRecord record;
};
/// Stores a run (replacing one with the same label) and keeps only the `keep` newest runs with a
/// record of that profile and kind, in one transaction.
bool storeRun(Db& db, int64_t profileId, const StoredRun& run, size_t keep, std::string* error);
/// The profile's runs with a record, oldest first (bars stored by storeRunBreakdown are not runs).
bool loadRuns(Db& db, int64_t profileId, std::vector<StoredRun>* out, std::string* error);

}  // namespace hetopt::analyzer
