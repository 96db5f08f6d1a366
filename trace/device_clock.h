// SPDX-License-Identifier: MIT
/**
 * @file Where a device's profiling clock stands against the trace's clock (ns since tracing
 * started) when the device cannot say (no clGetDeviceAndHostTimer): an estimate from timed
 * commands. A command's CL_PROFILING_COMMAND_QUEUED timestamp is taken while the enqueue call runs
 * on the host, so the offset (trace ns - device ns) lies between the call's start - queued and its
 * end - queued. Each timed command narrows that interval; the estimate is its middle, give or take
 * half its width. Driver-free: the shim's trace mode feeds it (shim/core/device_timing), tests
 * drive it directly.
 */
#pragma once
#include <cstdint>

namespace hetopt::trace {

class ClockEstimate {
 public:
  /// One timed command: its host call ran [hostStart, hostEnd] (trace ns), its QUEUED timestamp
  /// is `queued` (device ns). True when the estimate changed. A command that contradicts the
  /// interval (a driver that stamps QUEUED later, a clock that drifts) is kept only when it is
  /// narrower than what the interval has become.
  bool add(uint64_t hostStart, uint64_t hostEnd, uint64_t queued) {
    if (hostEnd < hostStart) return false;
    const int64_t lo = static_cast<int64_t>(hostStart - queued);
    const int64_t hi = static_cast<int64_t>(hostEnd - queued);
    if (!m_known) return set(lo, hi);
    const int64_t a = lo > m_lo ? lo : m_lo, b = hi < m_hi ? hi : m_hi;
    if (a <= b) return a == m_lo && b == m_hi ? false : set(a, b);
    return hi - lo < m_hi - m_lo ? set(lo, hi) : false;
  }
  bool known() const { return m_known; }
  /// trace ns = device ns + offsetNs(), within uncertaintyNs().
  int64_t offsetNs() const { return m_lo + (m_hi - m_lo) / 2; }
  uint64_t uncertaintyNs() const { return static_cast<uint64_t>(m_hi - m_lo) / 2; }

 private:
  bool set(int64_t lo, int64_t hi) {
    m_lo = lo;
    m_hi = hi;
    m_known = true;
    return true;
  }
  int64_t m_lo = 0, m_hi = 0;
  bool m_known = false;
};

}  // namespace hetopt::trace
