// SPDX-License-Identifier: MIT
/**
 * @file What a candidate site is worth on this machine: the characterized curves of the device
 * the trace ran on, asked "what if this site's memory came from the best policy for its sizes?".
 *
 * Per site: the policy is the decision table's choice for the site's typical transfer size (the
 * round-trip row when data crosses both ways); predicted times sum the fitted transfer functions
 * over every transfer size seen, with malloc memory (standard) and with that policy. A policy
 * allocated directly (not from a pool) also pays its extra allocation and free cost per
 * allocation; pooled allocation is prepared off the critical path and is not charged.
 *
 * Untracked memory (static arrays, anonymous mappings) can only be registered in place: its
 * prediction uses the register policy's transfer curves and charges one registration of the range.
 */
#pragma once
#include <memory>
#include <string>

#include "analyzer/profile.h"
#include "common/db.h"

namespace hetopt::analyzer {

class GainModel {
 public:
  virtual ~GainModel() = default;
  virtual void predict(const CandidateSite& site, GainPrediction* out) const = 0;
  /// In-place registration of memory no tracked allocation made (static data, an anonymous
  /// mapping): its transfers with the register policy's curves plus one registration of the
  /// transferred range, against the same transfers from pageable memory. Unknown by default.
  virtual void predictRegistration(const UntrackedMemory& memory, GainPrediction* out) const {
    *out = GainPrediction{};
    out->note = "no register curves";
  }
  /// "NVIDIA H200 (NVIDIA CUDA, driver 580.x), characterized 2026-11-20".
  virtual std::string describe() const = 0;
};

/// The stored characterization whose device name matches `device` (as traceDevice() gives it;
/// case-insensitive, newest run first). Null with *why (one line, saying what to run) when there
/// is none or the DB has no characterization tables.
std::unique_ptr<GainModel> loadGainModel(Db& db, const std::string& device, std::string* why);

}  // namespace hetopt::analyzer
