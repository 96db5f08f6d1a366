// SPDX-License-Identifier: MIT
/**
 * @file The trace's clock: CLOCK_MONOTONIC in nanoseconds. Trace mode reads it twice on every call
 * the program makes, and clock_gettime cost ~43 ns a read on the lent VMs: a third of what
 * recording costs a call on the program's thread. Where the kernel keeps that clock with the TSC
 * itself (clocksource "tsc": invariant, and checked by the kernel to agree across CPUs), the TSC
 * is read (~17 ns) and scaled instead. The recording thread calibrates the scale against
 * clock_gettime (TscClock::refresh) and slews it, never steps it back, so readings stay within
 * microseconds of CLOCK_MONOTONIC and never run backwards. Until calibrated, on other clock
 * sources or CPUs, and with HETOPT_CALL_CLOCK=monotonic: clock_gettime.
 */
#pragma once
#include <atomic>
#include <cstdint>

#include "common/clock.h"
#include "common/compiler.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define HETOPT_HAVE_TSC 1
#else
#define HETOPT_HAVE_TSC 0
#endif

namespace hetopt::trace {

/// TSC ticks to ns, from an anchor: ns(t) = ns + (t - tsc) * mult / 2^32, and ns itself before
/// the anchor (a reading never goes below the anchor it was scaled from).
struct TscScale {
  uint64_t tsc = 0, ns = 0, mult = 0;
  uint64_t at(uint64_t t) const {
    return t <= tsc
               ? ns
               : ns + static_cast<uint64_t>((static_cast<unsigned __int128>(t - tsc) * mult) >> 32);
  }
};

/// The calibration, as arithmetic on (TSC, CLOCK_MONOTONIC) pairs read together: no clock of its
/// own, so tests drive it with made-up clocks. The rate is the average since the first pair (its
/// error shrinks as the run goes on); each update anchors the scale where the current one stands
/// at that tick (continuous), and turns its rate by up to kMaxSlew so that it meets the monotonic
/// clock again over kSlewNs; it steps only forward, when it lags by more than kStepNs.
class TscCalibration {
 public:
  static constexpr uint64_t kFirstAfterNs =
      2000000;                                   ///< the first scale: 2 ms after the first pair
  static constexpr uint64_t kSlewNs = 20000000;  ///< errors are worked off over 20 ms
  static constexpr double kMaxSlew = 1e-4;       ///< ... turning the rate by at most 100 ppm
  static constexpr int64_t kStepNs = 100000;     ///< lagging by more: step forward

  void start(uint64_t tsc, uint64_t ns) {
    m_tsc0 = tsc;
    m_ns0 = ns;
    m_started = true;
    m_scaled = false;
  }
  /// A new pair; true when `*scale` is new (then publish it).
  bool update(uint64_t tsc, uint64_t ns, TscScale* scale);
  bool scaled() const { return m_scaled; }
  const TscScale& scale() const { return m_scale; }

 private:
  uint64_t m_tsc0 = 0, m_ns0 = 0;
  bool m_started = false, m_scaled = false;
  TscScale m_scale;
};

/// The process's trace clock (one per process; a forked child calibrates anew).
class TscClock {
 public:
  /// CLOCK_MONOTONIC's nanoseconds, through the TSC once calibrated. Any thread, no lock, no
  /// system call.
  static uint64_t nowNs() {
#if HETOPT_HAVE_TSC
    if (HETOPT_LIKELY(s_on.load(std::memory_order_relaxed))) {
      // A seqlock: the recording thread publishes a new scale every ~20 ms. A reader that keeps
      // meeting a half-written one (its writer preempted) reads the system clock instead.
      for (int tries = 0; tries < 16; ++tries) {
        const uint32_t seq = s_seq.load(std::memory_order_acquire);
        const TscScale s{s_tsc.load(std::memory_order_relaxed),
                         s_ns.load(std::memory_order_relaxed),
                         s_mult.load(std::memory_order_relaxed)};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (!(seq & 1) && s_seq.load(std::memory_order_relaxed) == seq) return s.at(__rdtsc());
      }
    }
#endif
    return clockNs(CLOCK_MONOTONIC);
  }
  /// Trace mode's start, before any recording thread runs, and a forked child's (its only
  /// thread): whether the TSC may serve (this CPU and the kernel's clock source, unless `allowed`
  /// is false); takes the first pair if so. Readings use clock_gettime until refresh() calibrates.
  static bool start(bool allowed);
  /// The recording thread, between its batches: a new pair every kSlewNs at most (cheaper
  /// calls return at once); publishes the scale it gives.
  static void refresh();
  /// Stops using the TSC (readings from clock_gettime again); as start(), not beside refresh().
  static void stop();
  /// Whether readings come from the TSC now.
  static bool scaling() { return s_on.load(std::memory_order_relaxed); }
  /// Whether the kernel's clock source, as `clocksourceText` names it (sysfs'
  /// current_clocksource), is the TSC.
  static bool kernelUsesTsc(const char* clocksourceText);

 private:
  static void publish(const TscScale& s);
  static inline std::atomic<bool> s_on{false};
  alignas(64) static inline std::atomic<uint32_t> s_seq{0};
  static inline std::atomic<uint64_t> s_tsc{0}, s_ns{0}, s_mult{0};
};

}  // namespace hetopt::trace
