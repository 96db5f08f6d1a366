// SPDX-License-Identifier: MIT
/**
 * @file What a candidate site is worth on this machine: the characterized curves of the device
 * the trace ran on, asked "what if this site's memory came from the best policy for its sizes?".
 * Two strategies are priced per site, a pool and registration in place, each with its full cost
 * as if on the critical path (the run keeps it off when it can); the site gets the one that saves
 * more.
 */
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "analyzer/profile.h"
#include "characterize/records.h"
#include "store/db.h"

namespace hetopt::analyzer {

class GainModel {
 public:
  virtual ~GainModel() = default;
  /// What the site's transfers cost as they are is the larger of what the trace measured on the
  /// device (a first transfer into never-touched memory included) and the standard curves (host
  /// time of blocking pageable transfers: the staging a copy's device time leaves out); pinned, the
  /// fitted transfer functions of the pinning policy summed over every transfer size seen. A pool
  /// of the decision table's pooled policy for the site's typical size costs its share of the pool
  /// (the site's peak live bytes, pinned once); registration in place costs the register curve's
  /// cost for every allocation. So a pool wins where allocation is expensive and repeated,
  /// registration where blocks are large and live long.
  virtual void predict(const CandidateSite& site, GainPrediction* out) const = 0;
  /// In-place registration of memory no tracked allocation made (static data, an anonymous
  /// mapping: it can only be registered in place): its transfers with the register policy's
  /// curves plus one registration of the transferred range, against the same transfers from
  /// pageable memory. Unknown by default.
  virtual void predictRegistration(const UntrackedMemory& memory, GainPrediction* out) const {
    *out = GainPrediction{};
    out->note = "no register curves";
  }
  /// What registering a block in place costs here, as a line: latency + ns per MiB. False when
  /// the device has no register curve.
  virtual bool registerCost(uint64_t* latencyNs, uint64_t* nsPerMiB) const { return false; }
  /// "NVIDIA H200 (NVIDIA CUDA, driver 580.x), characterized 2026-11-20".
  virtual std::string describe() const = 0;
};

/// The stored characterization whose device name matches `device` (as traceDevice() gives it;
/// case-insensitive, newest run first). Null with *why (one line, saying what to run) when there
/// is none or the DB has no characterization tables.
std::unique_ptr<GainModel> loadGainModel(Db& db, const std::string& device, std::string* why);

/// The DB the analysis stores into, opened and its characterizations read before the trace
/// exists (AnalysisWarmup does it while the traced program runs): the analysis then only picks
/// its device's curves.
struct OpenedDb {
  std::string path;
  std::unique_ptr<Db> db;  ///< null: it could not be opened (`error` says why)
  std::vector<characterize::CharacterizationRun> runs;
  bool runsRead = false;  ///< false: `error` says why (with a db: no curves, the store may work)
  std::string error;
};
/// Opens `path` read-write (creating it) and reads every characterization without its samples.
std::unique_ptr<OpenedDb> openDbWithCurves(const std::string& path);
/// loadGainModel() from what openDbWithCurves() read (a copy: `opened` serves the next process
/// of a run too).
std::unique_ptr<GainModel> gainModelFor(const OpenedDb& opened, const std::string& device,
                                        std::string* why);

}  // namespace hetopt::analyzer
