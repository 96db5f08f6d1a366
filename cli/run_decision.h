// SPDX-License-Identifier: MIT
/**
 * @file What `hetopt run` decided for a command (the plans it wrote, or why it runs the program
 * untouched), and the cache that lets the next run skip deciding again: a declined or reverted
 * program must cost under 1% of a 0.3 s run, and opening the DB, loading the profile and the
 * curves and pricing every site costs more than that. One small file per command
 * and option set (`<plans>/<key>.<options hash>.decision`, 0600), valid while hetopt, the DB, the
 * programs the plans are for, the plan files and the marks beside them are as they were, for
 * the same options.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hetopt::cli {

/// What `hetopt run` found for a command: the plan and the smaller plans the closed loop falls
/// back to (each step one plan file per program it optimizes), or why it runs untouched.
struct PreparedRun {
  std::string whyNot;  ///< empty: planned
  struct Step {
    std::string planFiles;  ///< ':'-separated, one per program
    uint64_t id = 0;        ///< the step's identity: its plans' (combined for several)
    std::string summary;    ///< the one line an optimized run of it prints
  };
  std::vector<Step> chain;
  /// The command's own plan file (of its identity key, whether or not it is written): its ledger
  /// and control runs' records go beside it. Empty when it has no profile (nothing is recorded for
  /// a program nobody traced).
  std::string commandPlan;
  std::string ledger;      ///< ledgerPath(commandPlan)
  std::string programKey;  ///< the command's identity key (run records)
  /// Files whose state the decision depends on beyond the DB: the programs planned for (their
  /// stamps must hold) and marks (their presence must hold): the fork marks, and the mark of a
  /// trace that saw no OpenCL call (contracts/trace_marks.h).
  std::vector<std::string> programs, marks;

  std::vector<uint64_t> ids() const {
    std::vector<uint64_t> out;
    for (const Step& s : chain) out.push_back(s.id);
    return out;
  }
};

/// The decision cached for the command with identity key `key`, asked with `options` (a string
/// naming every option that changes the decision), when it is still valid for the DB at
/// `dbPath`. False on a miss (no entry, or anything changed).
bool loadCachedDecision(const std::string& key, const std::string& options,
                        const std::string& dbPath, PreparedRun* out);
/// Remembers `run` (best effort: a cache that cannot be written costs the next run a decision).
void storeCachedDecision(const std::string& key, const std::string& options,
                         const std::string& dbPath, const PreparedRun& run);

}  // namespace hetopt::cli
