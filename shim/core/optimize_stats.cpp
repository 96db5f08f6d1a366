// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode at exit (see optimize_interceptor.h): the run record beside the plan
 * (contracts/run_record.h, for `hetopt report`), HETOPT_STATS' lines and HETOPT_STATS_JSON's file.
 * The text and the JSON are made from the same counters, one after the other.
 */
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <string>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/options.h"
#include "common/paths.h"
#include "contracts/run_record.h"
#include "common/sigxfsz_block.h"
#include "hetopt/version.h"
#include "shim/core/optimize_interceptor.h"
#include "shim/core/stats_text.h"

namespace hetopt::shim {
namespace {

// Fixed-width hex, as site keys are written everywhere else.
std::string hex64(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

}  // namespace

void OptimizeInterceptor::startRunClock() {
  m_startNs = clockNs(CLOCK_MONOTONIC);
  m_startUnixNs = clockNs(CLOCK_REALTIME);
  m_pid = getpid();
  // `hetopt run` exec'd this process: count from its start (its planning and the exec included).
  // Only in that process (not in children it starts) and only a start in the last minute.
  unsigned long long pid = 0, startedNs = 0;
  if (sscanf(optionString(Option::RUN_STARTED), "%llu:%llu", &pid, &startedNs) == 2 &&
      pid == static_cast<unsigned long long>(m_pid) && startedNs <= m_startNs && m_startNs - startedNs < 60000000000ull) {
    m_startUnixNs -= m_startNs - startedNs;
    m_startNs = startedNs;
  }
}

std::string OptimizeInterceptor::poolStats() {
  const int st = m_state.load(std::memory_order_acquire);
  if (!m_plan.hasPoolSites() && !m_direct)
    return std::string(m_plan.sites.empty() ? "no pool (registrations only)"
                                            : "no pool (sites registered in place)") +
           " in " + contextOrigin();
  if (st == static_cast<int>(PoolState::Failed))
    return std::string(m_direct ? "no direct allocation (" : "no pool (") + m_failure + ")";
  if (st != static_cast<int>(PoolState::Ready) && !contextExists())
    return "nothing pinned: the program made no OpenCL context on the planned device";
  // Whether it got ready before the program ended is a race a short program can lose; which
  // memory and which context it was preparing are facts either way.
  const std::string ready = st == static_cast<int>(PoolState::Ready)
                                ? ", ready after " + std::to_string(static_cast<int>(m_readyAfterMs)) + " ms"
                                : ", still preparing";
  if (m_direct)
    return "direct " + m_plan.poolPolicy + " allocation (no pool) in " + contextOrigin() + ready;
  return m_plan.poolPolicy + " pool of " + mib(m_plan.poolBytes) + " in " + contextOrigin() + ready;
}

std::string OptimizeInterceptor::statsText() {
  const char* memory = m_direct ? "pinned direct memory" : "pinned pool memory";
  auto n = [](const std::atomic<uint64_t>& v) { return std::to_string(v.load()); };
  std::string full = m_direct ? n(m_directFailed) + " policy failed" : n(m_poolFull) + " pool full";
  if (m_direct && m_directFailed.load()) full += " (first: " + std::string(m_direct->stats().firstFailure) + ")";
  // One fact per line, the pool first; the other parts' lines follow, all in one write.
  std::string text = poolStats() + "\n  " + conformanceStats() + "\n  " + std::to_string(m_plan.sites.size()) +
                     " candidate sites\n  redirected " + n(m_served) + " allocations (" + mib(m_servedBytes) +
                     "), released " + n(m_released) + "\n  fallbacks: " + n(m_noPool) +
                     " with no pool (not ready in time, or it failed)\n  fallbacks: " + full + ", " + n(m_movedOut) +
                     " moved out by realloc\n  transfers from " + memory + ": " + n(m_pinnedH2d) + " h2d (" +
                     mib(m_pinnedH2dBytes) + "), " + n(m_pinnedD2h) + " d2h (" + mib(m_pinnedD2hBytes) +
                     ")\n  transfers from other memory: " + n(m_otherH2d) + " h2d (" + mib(m_otherH2dBytes) +
                     "), " + n(m_otherD2h) + " d2h (" + mib(m_otherD2hBytes) + ")";
  if (m_inPlace.load()) text += "\n" + m_blocks.stats();
  if (m_registry) text += "\n" + m_registry->stats();
  return text;
}

std::string OptimizeInterceptor::statsJson(const std::string& text) {

  auto n = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  auto direction = [&](JsonWriter& j, const char* name, const std::atomic<uint64_t>& h2d,
                       const std::atomic<uint64_t>& h2dBytes, const std::atomic<uint64_t>& d2h,
                       const std::atomic<uint64_t>& d2hBytes) {
    j.key(name).beginObject().member("h2d", n(h2d)).member("h2d_bytes", n(h2dBytes));
    j.member("d2h", n(d2h)).member("d2h_bytes", n(d2hBytes)).endObject();
  };
  RunRecord run;
  m_ledger.fill(m_plan, &run);
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("format", 1).member("hetopt", HETOPT_VERSION_STRING);
  j.member("program", m_plan.programPath).member("program_key", m_plan.programKey);
  j.member("pid", static_cast<int64_t>(getpid())).member("plan_file", m_planPath);
  j.member("plan", hex64(planIdentity(m_plan))).member("predicted_saving_ns", m_plan.predictedSavingNs);
  j.member("wall_ns", clockNs(CLOCK_MONOTONIC) - m_startNs);
  j.member("pool", poolStats()).member("direct", m_direct != nullptr);
  j.member("conformant", !m_conformance.diverged());
  if (m_conformance.diverged()) j.member("deactivated", m_conformance.reason());
  j.member("not_redirected_after_deactivation", n(m_afterDivergence));
  j.member("candidate_sites", static_cast<uint64_t>(m_plan.sites.size()));
  j.member("redirected", n(m_served)).member("redirected_bytes", n(m_servedBytes));
  j.member("released", n(m_released)).member("fallback_no_pool", n(m_noPool));
  if (m_direct) j.member("fallback_policy_failed", n(m_directFailed));
  else j.member("fallback_pool_full", n(m_poolFull));
  j.member("moved_out_by_realloc", n(m_movedOut));
  direction(j, m_direct ? "transfers_pinned_direct" : "transfers_pinned_pool", m_pinnedH2d,
            m_pinnedH2dBytes, m_pinnedD2h, m_pinnedD2hBytes);
  direction(j, "transfers_other", m_otherH2d, m_otherH2dBytes, m_otherD2h, m_otherD2hBytes);
  if (m_inPlace.load()) {
    j.key("registered_blocks").beginObject();
    m_blocks.statsJson(j);
    j.endObject();
  }
  if (m_registry) {
    j.key("registered_in_place").beginObject();
    m_registry->statsJson(j);
    j.endObject();
  }
  // Every transfer the trace would count (trace::isTransfer), by outcome and by direction.
  const SiteLedger::Directions dirs = m_ledger.directions();
  j.key("run").beginObject().member("pinned", run.pinned).member("pinned_bytes", run.pinnedBytes);
  j.member("pageable", run.pageable).member("pageable_bytes", run.pageableBytes);
  j.member("other", run.other).member("other_bytes", run.otherBytes);
  j.member("h2d", dirs.h2d).member("h2d_bytes", dirs.h2dBytes);
  j.member("d2h", dirs.d2h).member("d2h_bytes", dirs.d2hBytes).endObject();
  j.key("sites").beginArray();
  for (const RunSiteCounts& s : run.sites) {
    j.beginObject().member("key", hex64(s.key)).member("transfers", s.transfers).member("bytes", s.bytes);
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

void OptimizeInterceptor::writeRunRecord() {
  // A forked child holds its parent's counters: only the process the plan was taken in records.
  if (getpid() != m_pid) return;
  RunRecord r;
  r.writer = HETOPT_VERSION_STRING;
  r.programKey = m_plan.programKey;
  r.planId = planIdentity(m_plan);
  r.predictedSavingNs = static_cast<double>(m_plan.predictedSavingNs);
  r.pid = static_cast<uint64_t>(m_pid);
  r.startedUnixNs = m_startUnixNs;
  r.wallNs = clockNs(CLOCK_MONOTONIC) - m_startNs;
  r.seq = optionUnsigned(Option::RUN_SEQ, 0, UINT64_MAX);  // 0 when unset: no ledger line
  m_ledger.fill(m_plan, &r);
  const std::string path = runRecordPath(m_planPath, r.pid, m_startUnixNs);
  std::string error;
  // Not the program's business: a directory that refuses it costs one debug line.
  if (!writeRunRecordFile(path, r, &error)) debug("no run record: %s", error.c_str());
}

void OptimizeInterceptor::processExit() {
  SigxfszBlock block;  // past a file size limit a record or the JSON is lost, not the program
  writeRunRecord();
  const bool text = optionFlag(Option::STATS);
  const char* jsonPath = optionString(Option::STATS_JSON);
  if (!text && !*jsonPath) return;
  const std::string lines = statsText();
  if (*jsonPath) {
    std::string path = jsonPath;
    if (getpid() != m_pid) path += "." + std::to_string(getpid());  // a forked child's own
    std::string error;
    if (!writePrivateFile(path, statsJson(lines), &error))
      warn("cannot write the stats as JSON: %s", error.c_str());
  }
  if (text) warnLines("stats: ", lines.c_str());
}

}  // namespace hetopt::shim
