// SPDX-License-Identifier: MIT
/**
 * @file The optimization plan: what `hetopt run` tells the shim (through HETOPT_PLAN_FILE) about
 * one program on one device. Written by the CLI from the application profile and the machine's
 * characterization; read by the shim at start-up. A small versioned text format, documented line
 * by line in trace/FORMAT.md ("Optimization plan"). A plan whose fields cannot be written that way
 * (a line break anywhere, a blank in the key or the policy) is refused by the writer rather than
 * written as something else: the shim must read back exactly what `hetopt run` decided.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/program_identity.h"

namespace hetopt {

inline constexpr int kPlanFormatVersion = 3;

/// What the traced run saw at a site (analyzer::CandidateSite): the run's conformance check
/// (shim/core/conformance.h) compares the program against it.
struct SiteProfile {
  uint64_t allocations = 0;
  uint64_t minAllocBytes = 0, maxAllocBytes = 0, typicalAllocBytes = 0;
  uint64_t peakLiveBytes = 0, peakLiveBlocks = 0;
};

/// How a site's blocks get pinned: from the pre-pinned pool, or registered where the system
/// allocator put them (in the background, once the pinning context exists).
enum class SiteStrategy : uint8_t { Pool, Register };
const char* siteStrategyName(SiteStrategy s);  ///< "pool", "register"

struct PlanSite {
  uint64_t key = 0;
  uint64_t minBytes = 0;
  uint64_t maxBytes = UINT64_MAX;
  SiteStrategy strategy = SiteStrategy::Pool;
  /// Per MiB a transfer moves: how long it may wait for its block's pinning (0: not at all).
  uint64_t waitNsPerMiB = 0;
  bool profiled = false;  ///< `profile` is known (plans from `hetopt run`; hand plans may omit it)
  SiteProfile profile;
};

/// Static data to register in place (module identity + offset: ASLR-independent).
struct PlanStaticRange {
  uint64_t moduleKey = 0;  ///< moduleIdentity() of the module (contracts/site_key.h)
  uint64_t offset = 0;     ///< start of the range minus the module's load bias
  uint64_t bytes = 0;
};

struct Plan {
  /// The executable; it may hold blanks: the `program` line's path runs to its last blank.
  std::string programPath;
  std::string programKey;  ///< "build-id:<hex>" or "sha256:<hex>"
  /// Optional: a file with the same stamp is the program without hashing it again; without one
  /// (hand-written plans, older writers) the shim identifies the program itself.
  bool hasProgramStamp = false;
  FileStamp programStamp;  ///< the file programKey was computed from
  std::string device;
  std::string poolPolicy = "opencl";  ///< "none" when no site is pooled
  uint64_t poolBytes = 0;
  /// `pool-mode direct`: no pool, each candidate allocation made by the policy on the calling
  /// thread (the naive variant, kept for comparison; poolBytes is then unused).
  bool directAllocation = false;
  std::vector<PlanSite> sites;  ///< sorted by key after parsing
  std::vector<PlanStaticRange> staticRanges;
  uint64_t mmapMinBytes = 0;  ///< anonymous mappings of [min, max] bytes are registered...
  uint64_t mmapMaxBytes = 0;  ///< ... none when 0
  /// Early context: the shim makes the program's one context at start-up and hands it to the
  /// program's matching clCreateContext[FromType], so pinning starts while the program still
  /// reads and computes. Late driver: the shim touches the driver only at the program's first
  /// OpenCL call (before it, it only loads the driver's libraries): the program forks, or can, and
  /// a forked child cannot use a driver its parent initialized.
  bool earlyContext = false;  ///< `context early`
  bool driverLate = false;    ///< `driver late`
  /// `build-ahead`: with the early context, the shim builds the recipe's programs
  /// (contracts/program_recipe.h) while the program starts; their number and the predicted saving.
  std::string buildAheadRecipe;  ///< empty: nothing built ahead
  uint64_t buildAheadPrograms = 0, buildAheadNs = 0;
  /// What registering a block in place costs: latency + per MiB (0, 0: unknown). A transfer
  /// registers its block itself when that is cheaper than waiting for the worker.
  uint64_t registerLatencyNs = 0, registerNsPerMiB = 0;
  uint64_t predictedSavingNs = 0;  ///< `predicted` (0: not said)

  bool registersMappings() const { return mmapMaxBytes != 0; }
  bool hasPoolSites() const {
    for (const PlanSite& s : sites)
      if (s.strategy == SiteStrategy::Pool) return true;
    return false;
  }
  /// Predicted time to register `bytes` in place (0 when the plan does not say).
  uint64_t registerNs(uint64_t bytes) const {
    return registerLatencyNs + static_cast<uint64_t>(static_cast<double>(registerNsPerMiB) *
                                                     static_cast<double>(bytes) / (1 << 20));
  }
  bool hasRegistrations() const { return !staticRanges.empty() || registersMappings(); }
  /// Pins nothing: its only gain is the start-up (`context early`, perhaps `build-ahead`). Its file
  /// says so in a last line of its own (`startup-only`), so that one cut short at a line end does
  /// not read as such a plan.
  bool startupOnly() const { return sites.empty() && !hasRegistrations(); }

  /// The entry for `key` whose size range holds `size`, or null.
  const PlanSite* find(uint64_t key, uint64_t size) const;
  /// Empty when serialize() reads back as this plan; else why not (one line).
  std::string unwritableReason() const;
  std::string serialize() const;
};

/// Orders the sites by key (stable: entries of one key keep their order), as parsePlan() leaves
/// them.
void sortPlanSites(Plan* plan);
/// Parses a plan; false with a one-line *error (and *plan unspecified) on any malformed input.
bool parsePlan(const std::string& text, Plan* plan, std::string* error);
/// Reads and parses a file; refuses files others can write.
bool readPlanFile(const std::string& path, Plan* plan, std::string* error);
/// Writes the plan to `path` with mode 0600; refuses a plan with an unwritableReason().
bool writePlanFile(const std::string& path, const Plan& plan, std::string* error);

}  // namespace hetopt
