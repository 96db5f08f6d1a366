// SPDX-License-Identifier: MIT
/** @file `hetopt trace`'s own phases; see trace_phases.h.
 * Before, during and after the program, from hetopt's own clocks and the analysis's phases. */
#include "cli/trace_phases.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <string>

#include "cli/launch.h"
#include "common/clock.h"
#include "common/phase_times.h"

namespace hetopt::cli {
namespace {

/// CPU time of hetopt's own process, every thread of it (the program's is not in it).
uint64_t processCpuNs() { return clockNs(CLOCK_PROCESS_CPUTIME_ID); }

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

void TracePhases::programStarted() {
  if (phases::enabled()) m_startedNs = clockNs(CLOCK_MONOTONIC);
}

void TracePhases::programEnded() {
  if (!phases::enabled()) return;
  m_endedNs = clockNs(CLOCK_MONOTONIC);
  m_endedCpuNs = processCpuNs();
}

void TracePhases::print() const {
  if (!phases::enabled() || !m_endedNs) return;
  const uint64_t now = clockNs(CLOCK_MONOTONIC);
  const std::string parts = phases::list();
  fprintf(stderr,
          "hetopt: timings: before the program %.1f ms (from hetopt's main; CPU %.1f ms in all "
          "before the "
          "program ended); the program %.1f ms; after it %.1f ms (CPU %.1f)%s%s",
          ms(m_startedNs - hetoptStartedNs()), ms(m_endedCpuNs), ms(m_endedNs - m_startedNs),
          ms(now - m_endedNs), ms(processCpuNs() - m_endedCpuNs), parts.empty() ? "" : ": ",
          parts.c_str());
}

}  // namespace hetopt::cli
