// SPDX-License-Identifier: MIT
/**
 * @file The optimization plan: what `hetopt run` tells the shim (through HETOPT_PLAN_FILE) about
 * one program on one device. Written by the CLI from the application profile and the machine's
 * characterization; read by the shim at start-up. A small versioned text format (trace/FORMAT.md,
 * "The optimization plan", documents it beside the trace format):
 *
 *   hetopt-plan 3                          (versions 1, without strategies, and 2, without
 *                                          `predicted`, are still read)
 *   program <path> <identity key>          the program it was made for (ProgramIdentity::key());
 *                                          the path runs to the line's last blank, so it may hold
 *                                          blanks
 *   stamp <dev> <inode> <size> <mtime-ns> <ctime-ns>
 *                                          optional: the program file's stamp when `hetopt run`
 *                                          identified it; a file with the same stamp is the
 *                                          program without hashing it again
 * (common/program_identity.h) device <filter>                        device for the shim's own
 * context (HETOPT_DEVICE rules) pool <policy> <bytes>                  pinned pool: backing policy
 * and capacity (`pool none 0`: no site is served from a pool) pool-mode direct optional: no pool;
 * every candidate allocation is made by the pool's policy itself (the naive variant) site <key-hex>
 * <min-bytes> <max-bytes> candidate allocation site (contracts/site_key.h) and the [register] [wait
 * <ns-per-MiB>]    sizes the curves say gain there; `register`: its blocks [profile <allocations>
 * <min-alloc> come from the system allocator and are pinned where <max-alloc> <typical-alloc> they
 * are (else: served from the pool); `wait`: how long <peak-live-bytes>                a transfer
 * may wait for pinning in progress per MiB it <peak-live-blocks>]              moves (what pageable
 * memory costs more than pinned, as traced); optionally what the profile saw there (the shim's
 * conformance check) context early                          optional: the shim makes the program's
 * context itself at start-up (the program made exactly one, on this device) and hands it to the
 * program's matching clCreateContext[FromType]: pinning starts while the program still reads and
 * computes its input driver late                            optional: the shim touches the OpenCL
 * driver only once the program made its first OpenCL call (it forks copies of itself, or can: they
 * cannot use a driver their parent initialized); before it, it only loads the driver's libraries
 *   register-cost <latency-ns> <ns-per-MiB> what registering a block in place costs here (the
 *                                          register curve): a transfer registers a block itself
 *                                          when that is cheaper than waiting
 *   register static <module-key-hex> <offset> <bytes>
 *                                          static data to register in place: the range at
 *                                          <offset> from the load bias of the module whose
 *                                          moduleIdentity() is <module-key>
 *   register mmap <min-bytes> <max-bytes>  anonymous private mappings of that many bytes to
 *                                          register in place (on their first transfer)
 *   predicted <saving-ns>                  optional: the saving `hetopt run` predicted for this
 *                                          plan (net of the shim's own cost); the shim copies it
 *                                          into its run record (contracts/run_record.h)
 *
 * Lines starting with '#' are comments. Readers reject other versions, naming both. A plan whose
 * fields cannot be written this way (a line break anywhere, a blank in the key or the policy) is
 * refused by the writer rather than written as something else. Plans without a stamp (hand-written
 * ones, older writers) make the shim identify the program itself.
 * A plan without pooled sites has `pool none 0`.
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
  std::string programPath;
  std::string programKey;  ///< "build-id:<hex>" or "sha256:<hex>"
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
  bool earlyContext = false;  ///< `context early`
  bool driverLate = false;    ///< `driver late`
  /// What registering a block in place costs: latency + per MiB (0, 0: unknown).
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
