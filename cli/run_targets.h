// SPDX-License-Identifier: MIT
/**
 * @file Which profiles a command line uses, found one way for `hetopt run` (to plan), `hetopt run
 * --untouched` (to record) and `hetopt report` (to compare): the command's identity through its
 * wrapper when it forwards its arguments (contracts/trace_marks.h), then its own profile or the
 * profiles its launcher record links (the processes it started that made OpenCL calls).
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/program_identity.h"

#ifdef HETOPT_HAVE_ANALYZER
#include "analyzer/profile_store.h"
#include "store/db.h"
#endif

namespace hetopt::cli {

/// A command line as run and report take it.
struct IdentifiedCommand {
  ProgramIdentity identity;  ///< whose profile it uses (its profileName: --profile)
  ProgramIdentity wrapper;   ///< the wrapper it was reached through (empty path: none)
  std::string label;         ///< for people: identity.describe(), after the command's own words
                             ///< when reached through a wrapper ("python3 x.py (/usr/bin/...)")
};

/// identifyCommand() with --profile's name; false with *error ("cannot identify ...").
bool identifyForRun(const std::vector<std::string>& command, const std::string& profileName,
                    IdentifiedCommand* out, std::string* error);

/// Why the command has no profile: traced without OpenCL calls (its mark), or never traced (with
/// `dbProblem`, what kept the DB from being read, when that is why: Db::open()'s error, or
/// Db::missingMessage() where there is none; `hetopt run` and `hetopt report` say it alike).
std::string whyNoProfile(const IdentifiedCommand& command, const std::string& dbProblem = {});

#ifdef HETOPT_HAVE_ANALYZER
/// A program to plan for: the command itself, or a process its launcher record names.
struct Target {
  analyzer::AppProfile profile;
  int64_t profileId = 0;  ///< its row in the DB (its runs are kept under it)
  bool self = true;       ///< the command's own process (the plan names it as it is now)
  uint64_t pid = 0;       ///< launched: its pid when traced
};

/// The profiles the command uses: its own, else (a wrapper, a launcher) those of the processes
/// it started that made OpenCL calls, as `hetopt trace` linked them, each unless it changed since;
/// with --profile the named one(s). Empty with the reason the command has none to use.
std::string findTargets(Db& db, const IdentifiedCommand& command, std::vector<Target>* targets);
#endif

}  // namespace hetopt::cli
