// SPDX-License-Identifier: MIT
/** @file Phase timing for HETOPT_TIMINGS; see phase_times.h.
 * Named phases and their wall and CPU time, printed on one line when asked for. */
#include "common/phase_times.h"

#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/options.h"

namespace hetopt::phases {
namespace {

struct Phase {
  std::string name;
  uint64_t wallNs = 0, cpuNs = 0;
};

std::mutex s_mutex;  // a warm-up thread adds its phases beside the main thread's
std::vector<Phase> s_phases;

}  // namespace

bool enabled() {
  static const bool on = optionFlag(Option::TIMINGS);
  return on;
}

uint64_t threadCpuNs() { return clockNs(CLOCK_THREAD_CPUTIME_ID); }

void add(const std::string& name, uint64_t wallNs, uint64_t cpuNs) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(s_mutex);
  for (Phase& p : s_phases)
    if (p.name == name) {
      p.wallNs += wallNs;
      p.cpuNs += cpuNs;
      return;
    }
  s_phases.push_back({name, wallNs, cpuNs});
}

std::string list() {
  std::lock_guard<std::mutex> lock(s_mutex);
  std::string out;
  char buf[64];
  for (const Phase& p : s_phases) {
    snprintf(buf, sizeof buf, " %.1f ms (CPU %.1f)", static_cast<double>(p.wallNs) / 1e6,
             static_cast<double>(p.cpuNs) / 1e6);
    out += (out.empty() ? "" : ", ") + p.name + buf;
  }
  return out;
}

Scope::Scope(const char* name) : m_name(enabled() ? name : nullptr) {
  if (!m_name) return;
  m_wallNs = clockNs(CLOCK_MONOTONIC);
  m_cpuNs = threadCpuNs();
}

void Scope::end() {
  if (!m_name) return;
  add(m_name, clockNs(CLOCK_MONOTONIC) - m_wallNs, threadCpuNs() - m_cpuNs);
  m_name = nullptr;
}

}  // namespace hetopt::phases
