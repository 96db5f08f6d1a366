// SPDX-License-Identifier: MIT
/**
 * @file The characterization's tables in hetopt's DB (docs/DB.md): one row per run, keyed by
 * platform, device, driver and host; its policies' availability, every raw sample, the fitted
 * functions and the decision table. A run replaces an earlier one with the same key.
 */
#pragma once
#include <string>
#include <vector>

#include "characterize/model.h"
#include "store/db.h"

namespace hetopt::characterize {

/// Creates the tables when missing (needs a writable DB).
bool ensureCharacterizeTables(Db& db, std::string* error);

/// Stores `run` (in one transaction), replacing the stored run with the same key; sets run->id.
bool storeRun(Db& db, CharacterizationRun* run, std::string* error);

/// Loads the run stored under `key`. *found=false (and true returned) when there is none.
bool loadRun(Db& db, const PlatformKey& key, CharacterizationRun* out, bool* found,
             std::string* error);

/// Every stored run, oldest first. A DB without characterize tables has none.
/// `samples` false leaves out the measurement points (every repetition of every size: most of a
/// run's bytes), for readers that need only the fits and decisions (`hetopt run`).
bool loadAllRuns(Db& db, std::vector<CharacterizationRun>* out, std::string* error,
                 bool samples = true);

}  // namespace hetopt::characterize
