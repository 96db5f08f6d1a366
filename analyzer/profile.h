// SPDX-License-Identifier: MIT
/**
 * @file The application profile: what the analysis of one trace decided and why. Stored in the DB
 * under the program's identity (profile_store.h), printed as a report or JSON (report.h), plotted
 * (plots.h). `hetopt run` reads the candidate sites back by their ASLR-independent site keys.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/symbolizer.h"
#include "common/program_identity.h"
#include "contracts/run_record.h"

namespace hetopt::analyzer {

/// Transfers of one direction: how many, how much, and their sizes.
struct TransferStats {
  uint64_t transfers = 0;
  uint64_t bytes = 0;
  uint64_t typicalBytes =
      0;  ///< the size that carries the most bytes (what the policy is chosen for)
  uint64_t maxBytes = 0;
  double deviceNs = 0;  ///< device time of these transfers as traced (0 without profiling info)
  /// Distinct sizes with their counts, largest volume first. Predictions use all of them; the DB
  /// keeps the first kStoredSizes (the totals above stay exact).
  struct SizeCount {
    uint64_t bytes = 0;
    uint64_t count = 0;
  };
  static constexpr size_t kStoredSizes = 8;
  std::vector<SizeCount> sizes;

  void add(uint64_t size, uint64_t count, double ns);
  /// Sorts `sizes` and sets typicalBytes (call once after the last add()).
  void finish();
};

/// What pinning a site's memory is worth on this machine, and how it is best done there.
///
/// Sites: the baseline is the larger of what the trace measured on the device for the site's
/// transfers (first-touch page faults included) and the standard curves (host time, staging
/// included); the pinned time comes from the curves; the cost is that of the strategy (pool:
/// pinning its share of the pool once; register: one registration per allocation), charged in
/// full as if it lay on the critical path.
struct GainPrediction {
  bool known = false;
  std::string note;  ///< why not known, or which characterization was used
  /// How the memory is pinned: "hybrid"/"opencl"/"locked" with allocMode "pool" (a pool of that
  /// policy), "register" with "direct" (registered in place, per block), or "standard" ("plain").
  std::string policy;
  std::string allocMode;   ///< "pool", "direct", "plain"
  double standardNs = 0;   ///< the site's transfers as they are: max(measured, curves)
  double optimizedNs = 0;  ///< ... pinned (curves), plus the strategy's pinning cost
  double costNs = 0;       ///< of optimizedNs, the pinning cost (pool share or registrations)
  bool measured = false;   ///< standardNs is the trace's measured time (above the curves)
  double tracedNs = 0;     ///< the transfers' device time as traced (0: not timed)
  double savingNs() const { return standardNs - optimizedNs; }
  /// "saves 1.20 ms", or "costs 1.20 ms" when pinning is slower: never a negative saving.
  std::string savingText() const;
  bool registers() const { return policy == "register"; }
  bool pools() const { return allocMode == "pool" && !policy.empty() && policy != "standard"; }
};

/// One allocation site whose memory feeds host<->device transfers.
struct CandidateSite {
  uint64_t siteKey = 0;             ///< the shim's siteKey(): stable across runs of this binary
  std::vector<ModulePc> frames;     ///< return addresses, innermost first
  SiteLocation location;            ///< symbolized (or module+offset)
  std::string allocator;            ///< "malloc", "calloc", "realloc", "new[]", ...
  uint64_t allocations = 0;         ///< allocations made at this site
  uint64_t feedingAllocations = 0;  ///< ... of which at least one version was transferred
  uint64_t minAllocBytes = 0, maxAllocBytes = 0, typicalAllocBytes = 0;
  uint64_t peakLiveBytes = 0;  ///< most bytes from this site alive at once (sizes the pool)
  uint64_t peakLiveBlocks = 0;
  TransferStats h2d, d2h;
  /// When its first block could be pinned off the critical path, in program order (the trace
  /// keeps no timestamps between calls): the first block was allocated before the program's first
  /// OpenCL call (so while the early context is made), and leadNs is the host time of the
  /// program's OpenCL calls between its first context and the site's first transfer (program
  /// builds, buffer creation: time a registration on hetopt's thread runs beside). Schema 4.
  bool allocatedBeforeOpenCL = false;
  uint64_t leadNs = 0;
  GainPrediction gain;
};

/// Transferred memory that no tracked allocation made: the run phase can only register it in place.
struct UntrackedMemory {
  enum class Kind : uint8_t { Static, Stack, Mmap, Heap, Unknown };
  Kind kind = Kind::Unknown;
  std::string what;          ///< "g_weights (static_mmap.cpp:32)", "anonymous mapping", ...
  std::string modulePath;    ///< for static data: the module holding it
  uint64_t regionBytes = 0;  ///< size of the transferred range (every transfer into it, widened)
  /// Static data: where the range lies in its module, ASLR-independent (the shim finds it again in
  /// a later run of the same build): moduleIdentity() of the module (contracts/site_key.h; 0:
  /// module unknown) and the range's start minus the module's load bias.
  uint64_t moduleKey = 0;
  uint64_t moduleOffset = 0;
  uint64_t mapBytes = 0;   ///< mmap: size of the mapping holding it at trace time (0: unknown)
  bool anonymous = false;  ///< mmap: an anonymous mapping (a file mapping is never registered)
  TransferStats h2d, d2h;
  GainPrediction gain;  ///< what registering it in place would save (the register curves)
  /// Whether `hetopt run` can find it again and register it: static data in a known module, or
  /// an anonymous mapping.
  bool registrable() const {
    return (kind == Kind::Static && moduleKey != 0) || (kind == Kind::Mmap && anonymous);
  }
};
const char* untrackedKindName(UntrackedMemory::Kind k);  ///< "static", "stack", "mmap", ...

/// Where the traced time went. The three parts sum to totalNs: kernel = time the device ran a
/// kernel; communication = time a transfer ran and no kernel did; cpuSync = the rest (host work,
/// API overhead, waiting). The overhead terms are sums over operations (they may overlap);
/// fitOverheads() makes them shares of totalNs that do not, as the report shows them.
struct Breakdown {
  double totalNs = 0;
  double kernelNs = 0;
  double communicationNs = 0;
  double cpuSyncNs = 0;
  double h2dNs = 0;     ///< device time of host->device transfers
  double d2hNs = 0;     ///< device time of device->host transfers
  double launchNs = 0;  ///< kernel launch latency: submit -> start on the device
  /// Host time in OpenCL calls that enqueue work or wait for it, less what a transfer call spent
  /// on its own transfer (a blocking call waits for it; h2dNs/d2hNs have that time).
  double dispatchSyncNs = 0;
  /// Host time in the other OpenCL calls (queries, context and program set-up, releases): part of
  /// cpu+sync, shown apart because it is start-up, not per-transfer overhead. Not stored in the DB.
  double setupNs = 0;
  /// hetopt's own recording after each call, part of cpu+sync: the trace's timed sample (format
  /// 3) extrapolated to every call. 0 for older traces. Not stored in the DB.
  double recordingNs = 0;
  uint64_t kernels = 0;
  bool hasDeviceTimes = false;  ///< the trace carried profiling timestamps
  /// Commands timed, and those sampling left untimed (HETOPT_TIME_SAMPLE): with any of the latter
  /// the device times above are extrapolated from the timed ones. Not stored in the DB.
  uint64_t deviceTimed = 0, deviceUnsampled = 0;
  double fraction(double ns) const { return totalNs > 0 ? ns / totalNs : 0; }
  /// Makes the overhead terms (and setupNs) shares of totalNs that sum to at most it. The set-up
  /// is host time in calls that neither enqueue nor wait; device times of commands that overlap
  /// (several queues; a kernel's launch latency while the commands before it run) are scaled down
  /// together to what it leaves of the wall time; dispatch/sync is host time, and host time that
  /// waits for those commands overlaps them: it gets at most what they and the set-up leave.
  void fitOverheads();
};

/// One bar of a breakdown plot (plots.h), stored beside the profile for later runs.
struct BreakdownBar {
  std::string label;  ///< "traced", "standard", "optimized"
  Breakdown breakdown;
};

struct Eligibility {
  double communicationNs = 0;  ///< cumulative host<->device transfer time
  double computationNs = 0;    ///< cumulative kernel time
  double ratio = 0;            ///< communication / computation (infinite when no kernel ran)
  double threshold = 0.1;      ///< dispatch ratio from which a program is eligible
  bool eligible = false;
  std::string reason;  ///< one line: the numbers and the verdict
};

/// The warning an analysis of an incomplete trace carries (a profile made from one may be replaced
/// by any later analysis; one from a complete trace only by another complete one).
inline constexpr const char* kIncompleteTraceWarning = "the trace is incomplete";
/// The warning of an analysis of a run that failed (a non-zero exit): like an incomplete trace's,
/// its profile gives way to any later one and does not replace one of a run that succeeded.
inline constexpr const char* kFailedRunWarning = "the traced run failed";

struct AppProfile {
  ProgramIdentity program;
  std::string traceFile;
  std::string device;  ///< "platform / device" the trace ran on
  std::string createdUtc;
  std::string hetoptVersion;
  Eligibility eligibility;
  Breakdown breakdown;
  std::vector<CandidateSite> candidates;  ///< most valuable first
  uint64_t hostOnlySites = 0;             ///< tracked allocation sites none of whose memory crossed
  uint64_t hostOnlyAllocations = 0;
  uint64_t trackedAllocations = 0;
  /// The program's clCreateContext[FromType] calls, and how many devices the first one named (0:
  /// by type): `hetopt run` makes a program's single context early, while the program starts.
  uint64_t contextsCreated = 0;
  /// Copies of itself the program forked while traced (each left a trace, same program): a forked
  /// child cannot use a driver its parent initialized, so `hetopt run` then leaves the driver
  /// alone until the program's own first OpenCL call (plan `driver late`).
  uint64_t forkedChildren = 0;
  uint64_t firstContextDevices = 0;
  /// The program's start-up as the trace saw it (format 4; all 0 when unknown), in ns since the
  /// trace started: when its OpenCL use and its first context creation began, and what its
  /// first platform query (loading the drivers) and context creation took. `hetopt run`
  /// overlaps the last two with the program's own start-up (planner.h: startupSavingNs).
  struct Startup {
    uint64_t firstCallNs = 0, firstContextNs = 0, enumerateNs = 0, contextNs = 0;
    /// Its clBuildProgram calls, in all, and when the first began (0: none, or not known).
    uint64_t buildNs = 0, firstBuildNs = 0;
    bool known() const { return firstCallNs != 0; }
  } startup;
  std::vector<UntrackedMemory> untracked;
  /// Transfers whose host side is memory mapped from an OpenCL buffer (hand-pinned code): already
  /// the driver's pinned memory, nothing to do. Report and JSON only, not stored in the DB.
  struct {
    TransferStats h2d, d2h;
  } openclMapped;
  std::vector<std::string> warnings;  ///< shown in the report, kept in the DB
};

/// The traced breakdown with each candidate's measured transfer time scaled by its predicted
/// optimized/standard ratio (gain.h): what the run would look like with the best policies, all
/// else equal. False (and *out untouched) when no candidate has a known prediction.
bool predictOptimizedBreakdown(const AppProfile& profile, Breakdown* out);

/// The breakdown of an optimized run from its run record (contracts/run_record.h): the total is the
/// run's measured wall time; kernel time as traced (pinning does not change kernels);
/// communication as traced less what the transfers that came from pinned memory save (each
/// candidate's predicted ratio, weighted by the share of its site's transfers the record saw
/// pinned); cpu+sync the rest. False when no candidate has a prediction (communication as traced).
bool runBreakdown(const AppProfile& profile, const RunRecord& record, Breakdown* out);

}  // namespace hetopt::analyzer
