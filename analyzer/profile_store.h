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

#include "analyzer/plots.h"
#include "analyzer/profile.h"
#include "common/db.h"

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
  /// Stale: the identity the stored profile was made for, and when.
  std::string storedKey, storedCreatedUtc;
};

/// The profile for the program `identity` names. Status None/Stale return true with *out untouched.
/// A DB without analyzer tables has no profiles.
bool loadProfile(Db& db, const ProgramIdentity& identity, AppProfile* out, ProfileLookup* lookup,
                 std::string* error);

/// A breakdown of a later run of a profiled program (`hetopt run`: "standard" and "optimized"),
/// kept beside the profile for the side-by-side plot. Replaces an earlier one with the same label.
bool storeRunBreakdown(Db& db, int64_t profileId, const BreakdownBar& bar, std::string* error);
bool loadRunBreakdowns(Db& db, int64_t profileId, std::vector<BreakdownBar>* out,
                       std::string* error);

}  // namespace hetopt::analyzer
