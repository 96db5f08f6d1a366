// SPDX-License-Identifier: MIT
/** @file Optimize mode's counters, stats and run record; see optimize_stats.h.
 * The counters' --stats text and JSON, the run clock, and the run record at exit. */
#include "shim/core/optimize_stats.h"

#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/options.h"
#include "common/paths.h"
#include "contracts/run_record.h"
#include "hetopt/version.h"
#include "shim/core/block_registration.h"
#include "shim/core/inplace_registry.h"
#include "shim/core/site_ledger.h"
#include "shim/core/stats_text.h"

namespace hetopt::shim {
namespace {

// Fixed-width hex, as site keys are written everywhere else.
std::string hex64(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

uint64_t load(const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); }
std::string text(const std::atomic<uint64_t>& v) { return std::to_string(load(v)); }

/// "1 candidate site", "2 candidate sites".
std::string counted(uint64_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// "conformant", or "deactivated: why" and a line of what was not redirected after it.
std::string conformanceText(const Conformance& conformance, const OptimizeCounters& c) {
  if (!conformance.diverged()) return "conformant";
  return std::string("deactivated: ") + conformance.reason() + "\n  " + text(c.afterDivergence) +
         " allocations not redirected after deactivation";
}

void transfersJson(JsonWriter& j, const char* name, const OptimizeCounters::Transfers& t) {
  j.key(name).beginObject().member("h2d", load(t.h2d)).member("h2d_bytes", load(t.h2dBytes));
  j.member("d2h", load(t.d2h)).member("d2h_bytes", load(t.d2hBytes)).endObject();
}

}  // namespace

Conformance::Usage OptimizeCounters::usage(uint64_t registeredTransfers) const {
  Conformance::Usage u;
  u.served = load(served);
  const uint64_t freed = load(released);
  u.liveBlocks = u.served > freed ? u.served - freed : 0;
  u.liveBytes = load(liveBytes);
  u.transfers = load(pinned.h2d) + load(pinned.d2h) + registeredTransfers;
  return u;
}

std::string poolHeading(const PoolFacts& f) {
  if (f.startupOnly) return "nothing pinned: a start-up-only plan";
  if (!f.poolSites && !f.direct)
    return std::string(f.anySites ? "no pool (sites registered in place)"
                                  : "no pool (registrations only)") +
           " in " + f.contextOrigin;
  if (f.state == Preparation::Pool::Failed)
    return std::string(f.direct ? "no direct allocation (" : "no pool (") + f.failure + ")";
  if (f.state != Preparation::Pool::Ready && !f.contextExists)
    return "nothing pinned: the program made no OpenCL context on the planned device";
  // Whether it got ready before the program ended is a race a short program can lose; which
  // memory and which context it was preparing are facts either way.
  const std::string ready =
      f.state == Preparation::Pool::Ready
          ? ", ready after " + std::to_string(static_cast<int>(f.readyAfterMs)) + " ms"
          : ", still preparing";
  if (f.direct) return "direct " + f.policy + " allocation (no pool) in " + f.contextOrigin + ready;
  return f.policy + " pool of " + mib(f.poolBytes) + " in " + f.contextOrigin + ready;
}

const char* poolStateName(const PoolFacts& f) {
  if (!f.poolSites && !f.direct) return "none";
  switch (f.state) {
    case Preparation::Pool::Preparing:
      return "preparing";
    case Preparation::Pool::Ready:
      return "ready";
    case Preparation::Pool::Failed:
      return "failed";
  }
  return "?";
}

std::string startupText(const StartupFacts& s) {
  char line[320];
  const std::string context = s.context;
  int n = snprintf(line, sizeof line, "start-up: %s",
                   context == "early"  ? "the early context, made while the program started"
                   : context == "late" ? "the program's own context, the driver left to it"
                                       : "the program's own context");
  if (s.contextWaitMs >= 0.05)
    n += snprintf(line + n, sizeof line - n, " (the program waited %.1f ms for it)",
                  s.contextWaitMs);
  const ProgramsAhead::Counts& p = s.programs;
  if (!s.buildAhead) {
    snprintf(line + n, sizeof line - n, "; no programs built ahead");
  } else if (!p.failure.empty()) {
    snprintf(line + n, sizeof line - n, "; no programs built ahead (%s)", p.failure.c_str());
  } else {
    snprintf(line + n, sizeof line - n,
             "; %u of %u programs built ahead, %u handed over (%u builds answered, %u built again "
             "with other options), %u asked for before they were reached; the program waited "
             "%.1f ms for builds",
             p.builtAhead, p.recipe, p.handedOver, p.buildsAnswered, p.rebuilt, p.notReached,
             p.waitMs);
  }
  return line;
}

std::string statsText(const StatsFacts& f, const OptimizeCounters& c) {
  const char* memory = f.direct ? "pinned direct memory" : "pinned pool memory";
  std::string full =
      f.direct ? text(c.directFailed) + " policy failed" : text(c.poolFull) + " pool full";
  if (f.direct && load(c.directFailed)) full += " (first: " + f.directFirstFailure + ")";
  // One fact per line, the pool first; the other parts' lines follow, all in one write.
  std::string out = f.heading + "\n  " + conformanceText(*f.conformance, c) + "\n  " +
                    counted(f.plan->sites.size(), "candidate site") + "\n  redirected " +
                    counted(load(c.served), "allocation") + " (" + mib(load(c.servedBytes)) +
                    "), released " + text(c.released) + "\n  fallbacks: " + text(c.noPool) +
                    " with no pool (not ready in time, or it failed)\n  fallbacks: " + full + ", " +
                    text(c.movedOut) + " moved out by realloc\n  transfers from " + memory + ": " +
                    text(c.pinned.h2d) + " h2d (" + mib(load(c.pinned.h2dBytes)) + "), " +
                    text(c.pinned.d2h) + " d2h (" + mib(load(c.pinned.d2hBytes)) +
                    ")\n  transfers from other memory: " + text(c.other.h2d) + " h2d (" +
                    mib(load(c.other.h2dBytes)) + "), " + text(c.other.d2h) + " d2h (" +
                    mib(load(c.other.d2hBytes)) + ")\n  " + startupText(f.startup);
  if (f.blocks) out += "\n" + f.blocks->stats();
  if (f.registry) out += "\n" + f.registry->stats();
  return out;
}

std::string statsJson(const StatsFacts& f, const OptimizeCounters& c, const std::string& text) {
  const Plan& plan = *f.plan;
  RunRecord run;
  f.ledger->fill(plan, &run);
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("format", 1).member("hetopt", HETOPT_VERSION_STRING);
  j.member("program", plan.programPath).member("program_key", plan.programKey);
  j.member("pid", f.pid).member("plan_file", f.planPath);
  j.member("plan", hex64(planIdentity(plan))).member("predicted_saving_ns", plan.predictedSavingNs);
  j.member("wall_ns", f.wallNs);
  j.member("pool", f.heading).member("pool_state", poolStateName(f.pool));
  if (f.pool.state == Preparation::Pool::Failed) j.member("pool_failure", f.pool.failure);
  j.member("pool_policy", f.pool.policy).member("pool_bytes", f.pool.poolBytes);
  j.member("context", f.pool.contextOrigin).member("direct", f.direct);
  j.member("conformant", !f.conformance->diverged());
  if (f.conformance->diverged()) j.member("deactivated", f.conformance->reason());
  j.member("not_redirected_after_deactivation", load(c.afterDivergence));
  j.member("candidate_sites", static_cast<uint64_t>(plan.sites.size()));
  j.member("redirected", load(c.served)).member("redirected_bytes", load(c.servedBytes));
  j.member("released", load(c.released)).member("fallback_no_pool", load(c.noPool));
  if (f.direct)
    j.member("fallback_policy_failed", load(c.directFailed));
  else
    j.member("fallback_pool_full", load(c.poolFull));
  j.member("moved_out_by_realloc", load(c.movedOut));
  transfersJson(j, f.direct ? "transfers_pinned_direct" : "transfers_pinned_pool", c.pinned);
  transfersJson(j, "transfers_other", c.other);
  const ProgramsAhead::Counts& ahead = f.startup.programs;
  j.key("startup").beginObject().member("context", f.startup.context);
  j.member("programs_in_recipe", static_cast<uint64_t>(ahead.recipe));
  j.member("programs_built_ahead", static_cast<uint64_t>(ahead.builtAhead));
  j.member("programs_handed_over", static_cast<uint64_t>(ahead.handedOver));
  j.member("builds_answered", static_cast<uint64_t>(ahead.buildsAnswered));
  j.member("programs_built_again", static_cast<uint64_t>(ahead.rebuilt));
  j.member("programs_not_reached", static_cast<uint64_t>(ahead.notReached));
  j.member("queues_handed_over", static_cast<uint64_t>(0));
  if (!ahead.failure.empty()) j.member("build_ahead_failure", ahead.failure);
  j.key("wait_ms").beginObject().member("context", f.startup.contextWaitMs);
  j.member("programs", ahead.waitMs).member("queues", 0.0).endObject().endObject();
  if (f.blocks) {
    j.key("registered_blocks").beginObject();
    f.blocks->statsJson(j);
    j.endObject();
  }
  if (f.registry) {
    j.key("registered_in_place").beginObject();
    f.registry->statsJson(j);
    j.endObject();
  }
  // Every transfer the trace would count (trace::isTransfer), by outcome and by direction.
  const SiteLedger::Directions dirs = f.ledger->directions();
  j.key("run").beginObject().member("pinned", run.pinned).member("pinned_bytes", run.pinnedBytes);
  j.member("pageable", run.pageable).member("pageable_bytes", run.pageableBytes);
  j.member("other", run.other).member("other_bytes", run.otherBytes);
  j.member("h2d", dirs.h2d).member("h2d_bytes", dirs.h2dBytes);
  j.member("d2h", dirs.d2h).member("d2h_bytes", dirs.d2hBytes).endObject();
  j.key("sites").beginArray();
  for (const RunSiteCounts& s : run.sites) {
    j.beginObject()
        .member("key", hex64(s.key))
        .member("transfers", s.transfers)
        .member("bytes", s.bytes);
    j.member("pinned", s.pinned).member("pageable", s.pageable).endObject();
  }
  j.endArray().key("lines").beginArray();
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    j.value(text.substr(start, end - start));
    start = end + 1;
  }
  j.endArray().endObject();
  return out + "\n";
}

RunClock RunClock::start() {
  RunClock c;
  c.startNs = clockNs(CLOCK_MONOTONIC);
  c.startUnixNs = clockNs(CLOCK_REALTIME);
  c.pid = getpid();
  // `hetopt run` exec'd this process: count from its start (its planning and the exec included).
  // Only in that process (not in children it starts) and only a start in the last minute.
  unsigned long long pid = 0, startedNs = 0;
  if (sscanf(optionString(Option::RUN_STARTED), "%llu:%llu", &pid, &startedNs) == 2 &&
      pid == static_cast<unsigned long long>(c.pid) && startedNs <= c.startNs &&
      c.startNs - startedNs < 60000000000ull) {
    c.startUnixNs -= c.startNs - startedNs;
    c.startNs = startedNs;
  }
  return c;
}

uint64_t RunClock::wallNs() const { return clockNs(CLOCK_MONOTONIC) - startNs; }

void writeRunRecord(const Plan& plan, const std::string& planPath, const SiteLedger& ledger,
                    const RunClock& clock) {
  // A forked child holds its parent's counters: only the process the plan was taken in records.
  if (getpid() != clock.pid) return;
  // `hetopt run --verify=off` (benchmarks) keeps nothing: its runs must not feed `hetopt report`.
  if (strcmp(optionString(Option::VERIFY), "off") == 0) return;
  RunRecord r;
  r.writer = HETOPT_VERSION_STRING;
  r.programKey = plan.programKey;
  r.planId = planIdentity(plan);
  r.predictedSavingNs = static_cast<double>(plan.predictedSavingNs);
  r.pid = static_cast<uint64_t>(clock.pid);
  r.startedUnixNs = clock.startUnixNs;
  r.wallNs = clock.wallNs();
  r.seq = optionUnsigned(Option::RUN_SEQ, 0, UINT64_MAX);  // 0 when unset: no ledger line
  ledger.fill(plan, &r);
  const std::string path = runRecordPath(planPath, r.pid, clock.startUnixNs);
  std::string error;
  // Not the program's business: a directory that refuses it costs one debug line.
  if (!writeRunRecordFile(path, r, &error)) debug("no run record: %s", error.c_str());
}

bool statsWanted(bool* text, const char** jsonPath) {
  *text = optionFlag(Option::STATS);
  *jsonPath = optionString(Option::STATS_JSON);
  return *text || **jsonPath;
}

void writeStatsFiles(const StatsFacts& f, const OptimizeCounters& c, const RunClock& clock,
                     bool text, const char* jsonPath) {
  const std::string lines = statsText(f, c);
  if (*jsonPath) {
    std::string path = jsonPath;
    if (getpid() != clock.pid) path += "." + std::to_string(getpid());  // a forked child's own
    std::string error;
    if (!writePrivateFile(path, statsJson(f, c, lines), &error))
      warn("cannot write the stats as JSON: %s", error.c_str());
  }
  if (text) warnLines("stats: ", lines.c_str());
}

}  // namespace hetopt::shim
