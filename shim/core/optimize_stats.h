// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode's counters and what is written from them at exit: HETOPT_STATS' lines (a
 * heading per part, one fact per indented line), HETOPT_STATS_JSON's file (the same counters as
 * JSON, the lines too), and the run record beside the plan (contracts/run_record.h, for
 * `hetopt report`). The text and the JSON are made from the same counters, one after the other.
 *
 * Thread safety: the counters are relaxed atomics, bumped on the program's threads; the writers
 * run once, at exit (or in tests), reading the facts the interceptor's other parts hold.
 */
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "contracts/plan.h"
#include "shim/core/conformance.h"
#include "shim/core/preparation.h"
#include "shim/core/programs_ahead.h"

namespace hetopt::shim {

class BlockRegistration;
class InplaceRegistry;
class SiteLedger;

/// What optimize mode did: redirected allocations, their fallbacks, and the transfers that used
/// pinned memory (pool or direct) and other memory.
struct OptimizeCounters {
  struct Transfers {
    std::atomic<uint64_t> h2d{0}, h2dBytes{0}, d2h{0}, d2hBytes{0};
    void add(bool toDevice, uint64_t bytes) {
      (toDevice ? h2d : d2h).fetch_add(1, std::memory_order_relaxed);
      (toDevice ? h2dBytes : d2hBytes).fetch_add(bytes, std::memory_order_relaxed);
    }
  };
  std::atomic<uint64_t> served{0}, servedBytes{0}, released{0};
  std::atomic<uint64_t> inPlace{0}, inPlaceBytes{0};  ///< of those, registered where they are
  std::atomic<uint64_t> noPool{0}, poolFull{0}, movedOut{0};
  std::atomic<uint64_t> directFailed{0};     ///< pool-mode direct: the policy failed
  std::atomic<uint64_t> afterDivergence{0};  ///< not redirected once the program diverged
  std::atomic<uint64_t> liveBytes{0};        ///< usable bytes of redirected blocks not yet freed
  Transfers pinned, other;

  static void bump(std::atomic<uint64_t>& c, uint64_t by = 1) {
    c.fetch_add(by, std::memory_order_relaxed);
  }
  /// A block of `size` bytes (`usable` of them) redirected.
  void servedBlock(uint64_t size, uint64_t usable) {
    bump(served);
    bump(servedBytes, size);
    bump(liveBytes, usable);
  }
  /// What the conformance check compares with the profile; `registeredTransfers` are the
  /// transfers from blocks registered in place.
  Conformance::Usage usage(uint64_t registeredTransfers) const;
};

/// What the stats' heading is made of: which pinned memory, in which context, how far it got.
struct PoolFacts {
  bool poolSites = false;    ///< the plan has pool sites
  bool anySites = false;     ///< it has sites at all (else registrations only)
  bool startupOnly = false;  ///< neither sites nor registrations: the start-up was all (Plan)
  bool direct = false;       ///< pool-mode direct
  Preparation::Pool state = Preparation::Pool::Preparing;
  std::string failure;
  double readyAfterMs = 0;
  bool contextExists = false;
  std::string contextOrigin;
  std::string policy;
  uint64_t poolBytes = 0;
};
/// "opencl pool of 12.0 MiB in the program's context, ready after 30 ms", "no pool (why)", ...
std::string poolHeading(const PoolFacts& f);
/// For the JSON: "none" (no pool and no direct policy: registrations only), "preparing", "ready",
/// "failed".
const char* poolStateName(const PoolFacts& f);

/// The OpenCL start-up the run moved off the program's path.
struct StartupFacts {
  /// "early" (the program got the early context), "program" (it made its own), "late" (the driver
  /// was left to the program's first call).
  const char* context = "program";
  double contextWaitMs = 0;  ///< the program's context creation waited for the early one
  bool buildAhead = false;   ///< the plan builds programs ahead
  ProgramsAhead::Counts programs;
};
/// "start-up: early context (waited 3 ms); 2 programs built ahead, 2 handed over, ..."
std::string startupText(const StartupFacts& s);

/// Everything the stats say besides the counters, as the other parts hold it at exit.
struct StatsFacts {
  const Plan* plan = nullptr;
  std::string planPath;
  PoolFacts pool;       ///< the heading's facts, also in the JSON one by one
  std::string heading;  ///< poolHeading(pool)
  bool direct = false;
  std::string directFirstFailure;  ///< the direct policy's first failure
  const Conformance* conformance = nullptr;
  const BlockRegistration* blocks = nullptr;  ///< when it registered blocks (its part follows)
  const InplaceRegistry* registry = nullptr;  ///< with in-place registrations (its part follows)
  const SiteLedger* ledger = nullptr;         ///< every transfer, per site
  StartupFacts startup;
  uint64_t wallNs = 0;  ///< since the run started (RunClock)
  int64_t pid = 0;
};
/// HETOPT_STATS' lines: the heading, then one fact per line indented by two spaces, then the
/// registered blocks' and the in-place registry's parts.
std::string statsText(const StatsFacts& f, const OptimizeCounters& c);
/// HETOPT_STATS_JSON's object (newline-terminated), with `text`'s lines in "lines".
std::string statsJson(const StatsFacts& f, const OptimizeCounters& c, const std::string& text);

/// When the run started: `hetopt run`'s own start (HETOPT_RUN_STARTED, when it exec'd this very
/// process within the last minute), else the shim's.
struct RunClock {
  uint64_t startNs = 0, startUnixNs = 0;  ///< steady and wall clock
  int pid = 0;                            ///< the process the plan was taken in
  static RunClock start();
  uint64_t wallNs() const;
};
/// The run record beside the plan (a forked child writes none: it holds its parent's counters;
/// nor does a run with HETOPT_VERIFY=off, which `hetopt run --verify=off` sets).
void writeRunRecord(const Plan& plan, const std::string& planPath, const SiteLedger& ledger,
                    const RunClock& clock);
/// Whether the stats are asked for: as lines (HETOPT_STATS), as JSON (HETOPT_STATS_JSON's path).
bool statsWanted(bool* text, const char** jsonPath);
/// Writes them as asked (a forked child's JSON file gets ".<pid>").
void writeStatsFiles(const StatsFacts& f, const OptimizeCounters& c, const RunClock& clock,
                     bool text, const char* jsonPath);
/// At exit: the stats, each form when asked for; `facts()` is called only then.
template <typename Facts>
void writeStats(Facts facts, const OptimizeCounters& c, const RunClock& clock) {
  bool text = false;
  const char* jsonPath = "";
  if (statsWanted(&text, &jsonPath)) writeStatsFiles(facts(), c, clock, text, jsonPath);
}

}  // namespace hetopt::shim
