// SPDX-License-Identifier: MIT
/**
 * @file Where `hetopt trace`'s own time goes (HETOPT_TIMINGS=1): before the program, the program
 * (from fork to its reaping), and after it, with the phases the analysis timed (common/
 * phase_times.h), on one line at the end. The benchmarks read the "after it" figure.
 */
#pragma once
#include <cstdint>

namespace hetopt::cli {

class TracePhases {
 public:
  void programStarted();
  void programEnded();
  /// "hetopt: timings: ..." on stderr when HETOPT_TIMINGS is set.
  void print() const;

 private:
  uint64_t m_startedNs = 0, m_endedNs = 0, m_endedCpuNs = 0;
};

}  // namespace hetopt::cli
