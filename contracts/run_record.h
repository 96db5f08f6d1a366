// SPDX-License-Identifier: MIT
/**
 * @file The run record: what one run of a profiled program did, written next to its plan (0600)
 * and read by `hetopt report`, which moves it into the DB. An optimized run's is written by the
 * shim at exit; an untouched one's (`hetopt run --untouched`, no shim) by hetopt once it reaped
 * the program. A small versioned text format, documented line by line in trace/FORMAT.md ("Run
 * record"); readers reject newer versions, unknown lines and records without `end`, so a record
 * cut short is never taken for a whole one.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "contracts/plan.h"

namespace hetopt {

/// Written; readers take every version from 1 on.
inline constexpr int kRunRecordFormatVersion = 3;

/// Optimized: the shim ran the program with a plan. Untouched: `hetopt run --untouched` ran it
/// exactly as natively, to measure what hetopt saves against.
enum class RunKind { Optimized, Untouched };
const char* runKindName(RunKind kind);
/// False for a name that is no kind.
bool parseRunKind(const std::string& name, RunKind* out);

struct RunSiteCounts {
  uint64_t key = 0;
  uint64_t transfers = 0, bytes = 0;  ///< from memory hetopt served for the site
  uint64_t pinned = 0;                ///< of those, from pinned memory
  uint64_t pageable = 0;              ///< ... gone ahead pageable (a block not pinned yet)
};

/// One run. `startedUnixNs`: optimized, the wall clock when the shim started in the process;
/// untouched, just before hetopt started it. `wallNs` (steady clock): from then to exit, or until
/// hetopt reaped it. How it ended (`exited` with `exitStatus`, or `signal`): one of the two in an
/// untouched record, either or none in an optimized one (none: the shim wrote it at exit, under
/// `--verify=off`). `seq`: hetopt timed the run, from its own start until it reaped the program,
/// for the closed loop. `note`: `no-shim-record` (the program ended without the shim's exit
/// handler: _exit, a signal, exec) or `interrupted` (the terminal's signal reached hetopt). The
/// transfer counts are every host<->device transfer the trace would count (trace::isTransfer):
/// from pinned memory (pool, direct, registered blocks and ranges), gone ahead pageable from a
/// block not pinned yet, and from other memory.
struct RunRecord {
  RunKind kind = RunKind::Optimized;
  std::string writer;  ///< hetopt version that wrote it
  std::string programKey;
  uint64_t planId = 0;
  double predictedSavingNs = 0;
  uint64_t pid = 0;
  uint64_t startedUnixNs = 0;
  uint64_t wallNs = 0;
  uint64_t exitStatus =
      0;                ///< the program's exit status (untouched runs; optimized ones hetopt timed)
  bool exited = false;  ///< it ended by exit with exitStatus (`exit` line)
  uint64_t signal = 0;  ///< the signal that ended it (`signal` line), else 0
  uint64_t seq = 0;     ///< its run ledger line (0: not in the ledger)
  std::string note;     ///< one word, or empty
  uint64_t pinned = 0, pinnedBytes = 0, pageable = 0, pageableBytes = 0, other = 0, otherBytes = 0;
  std::vector<RunSiteCounts> sites;

  std::string serialize() const;
};

/// Parses a record; false with a one-line *error on anything but a whole record of this version:
/// a newer format version (naming both), unknown lines, an optimized record without `plan`, an
/// untouched one with a plan, transfers or sites or without its ending, a record without `end`.
bool parseRunRecord(const std::string& text, RunRecord* out, std::string* error);

/// What identifies a plan's contents (FNV-1a of Plan::serialize() with the sites in key order, as
/// parsePlan() reads them): runs with the same identity ran the same plan, and the plan `hetopt
/// run` wrote has the identity of the one the shim read from its file.
uint64_t planIdentity(const Plan& plan);

/// The plan file `hetopt run` writes for a program key, without its directory: the key with what
/// a path or a ':'-separated list cannot hold replaced, plus ".plan".
std::string planFileName(const std::string& programKey);
/// The run records of the plan at `planPath`: "<planPath minus .plan>." + "<pid>-<started>.run".
std::string runRecordPrefix(const std::string& planPath);
inline constexpr const char* kRunRecordSuffix = ".run";
/// The record of the run `pid` started at `startedUnixNs` beside the plan at `planPath`.
std::string runRecordPath(const std::string& planPath, uint64_t pid, uint64_t startedUnixNs);
/// Left beside the plan at `planPath` by an optimized run of it that forked (runRecordPrefix +
/// "forked", empty, 0600), left by a forked copy's first OpenCL call in an optimized run: the
/// program forks copies that use OpenCL in some runs even if it did not when traced, so
/// `hetopt run` plans `driver late` for it from then on (a forked child cannot use the driver its
/// parent started, and hetopt starts it early).
std::string forkMarkerPath(const std::string& planPath);

/// Writes `record` to `path` (0600, through a temporary file renamed into place: a reader never
/// sees half a record). False with *error.
bool writeRunRecordFile(const std::string& path, const RunRecord& record, std::string* error);
/// Reads one (refusing links, others' files, files others can write); false with *error.
bool readRunRecordFile(const std::string& path, RunRecord* out, std::string* error);

}  // namespace hetopt
