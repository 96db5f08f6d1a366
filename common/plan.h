// SPDX-License-Identifier: MIT
/**
 * @file The optimization plan: what `hetopt run` tells the shim (through HETOPT_PLAN_FILE) about
 * one program on one device. Written by the CLI from the application profile and the machine's
 * characterization; read by the shim at start-up. A small versioned text format (trace/FORMAT.md,
 * "The optimization plan", documents it beside the trace format):
 *
 *   hetopt-plan 1
 *   program <path> <identity key>          the program it was made for (ProgramIdentity::key());
 *                                          the path runs to the line's last blank, so it may hold
 *                                          blanks
 *   stamp <dev> <inode> <size> <mtime-ns> <ctime-ns>
 *                                          optional: the program file's stamp when `hetopt run`
 *                                          identified it; a file with the same stamp is the
 *                                          program without hashing it again (common/program_identity.h)
 *   device <filter>                        device for the shim's own context (HETOPT_DEVICE rules)
 *   pool <policy> <bytes>                  pinned pool: backing policy and capacity
 *   pool-mode direct                       optional: no pool; every candidate allocation is made
 *                                          by the pool's policy itself (the naive variant)
 *   site <key-hex> <min-bytes> <max-bytes> candidate allocation site (common/site_key.h) and the
 *        [profile <allocations> <min-alloc> <max-alloc> <typical-alloc> <peak-live-bytes>
 *         <peak-live-blocks>]              sizes the curves say gain there; optionally what the
 *                                          profile saw there (the shim's conformance check)
 *   register static <module-key-hex> <offset> <bytes>
 *                                          static data to register in place: the range at
 *                                          <offset> from the load bias of the module whose
 *                                          moduleIdentity() is <module-key>
 *   register mmap <min-bytes> <max-bytes>  anonymous private mappings of that many bytes to
 *                                          register in place (on their first transfer)
 *
 * Lines starting with '#' are comments. Readers reject other versions, naming both. A plan whose
 * fields cannot be written this way (a line break anywhere, a blank in the key or the policy) is
 * refused by the writer rather than written as something else. Plans without a stamp (hand-written
 * ones, older writers) make the shim identify the program itself.
 * A plan with registrations only has no sites and `pool none 0`.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/program_identity.h"

namespace hetopt {

inline constexpr int kPlanFormatVersion = 1;

/// What the traced run saw at a site (analyzer::CandidateSite): the run's conformance check
/// (shim/core/conformance.h) compares the program against it.
struct SiteProfile {
  uint64_t allocations = 0;
  uint64_t minAllocBytes = 0, maxAllocBytes = 0, typicalAllocBytes = 0;
  uint64_t peakLiveBytes = 0, peakLiveBlocks = 0;
};

struct PlanSite {
  uint64_t key = 0;
  uint64_t minBytes = 0;
  uint64_t maxBytes = UINT64_MAX;
  bool profiled = false;  ///< `profile` is known (plans from `hetopt run`; hand plans may omit it)
  SiteProfile profile;
};

/// Static data to register in place (module identity + offset: ASLR-independent).
struct PlanStaticRange {
  uint64_t moduleKey = 0;  ///< moduleIdentity() of the module (common/site_key.h)
  uint64_t offset = 0;     ///< start of the range minus the module's load bias
  uint64_t bytes = 0;
};

struct Plan {
  std::string programPath;
  std::string programKey;  ///< "build-id:<hex>" or "sha256:<hex>"
  bool hasProgramStamp = false;
  FileStamp programStamp;  ///< the file programKey was computed from
  std::string device;
  std::string poolPolicy = "opencl";
  uint64_t poolBytes = 0;
  /// `pool-mode direct`: no pool, each candidate allocation made by the policy on the calling
  /// thread (the source's naive variant, kept for comparison; poolBytes is then unused).
  bool directAllocation = false;
  std::vector<PlanSite> sites;  ///< sorted by key after parsing
  std::vector<PlanStaticRange> staticRanges;
  uint64_t mmapMinBytes = 0;  ///< anonymous mappings of [min, max] bytes are registered...
  uint64_t mmapMaxBytes = 0;  ///< ... none when 0

  bool registersMappings() const { return mmapMaxBytes != 0; }
  bool hasRegistrations() const { return !staticRanges.empty() || registersMappings(); }

  /// The entry for `key` whose size range holds `size`, or null.
  const PlanSite* find(uint64_t key, uint64_t size) const;
  /// Empty when serialize() reads back as this plan; else why not (one line).
  std::string unwritableReason() const;
  std::string serialize() const;
};

/// Parses a plan; false with a one-line *error (and *plan unspecified) on any malformed input.
bool parsePlan(const std::string& text, Plan* plan, std::string* error);
/// Reads and parses a file; refuses files others can write.
bool readPlanFile(const std::string& path, Plan* plan, std::string* error);
/// Writes the plan to `path` with mode 0600; refuses a plan with an unwritableReason().
bool writePlanFile(const std::string& path, const Plan& plan, std::string* error);

}  // namespace hetopt
