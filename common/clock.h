// SPDX-License-Identifier: MIT
/** @file A clock's reading in nanoseconds (clock_gettime): allocation-free, for the shim too.
 * Header-only; the caller picks the clock: monotonic for durations, realtime for records. */
#pragma once
#include <time.h>

#include <cstdint>

namespace hetopt {

inline uint64_t clockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

/// CLOCK_MONOTONIC in milliseconds: how long a step took or waited, for stats and debug lines.
inline double monotonicMs() { return static_cast<double>(clockNs(CLOCK_MONOTONIC)) / 1e6; }

}  // namespace hetopt
