// SPDX-License-Identifier: MIT
/** @file The trace's clock through the TSC; see trace_clock.h. */
#include "trace/trace_clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace hetopt::trace {

bool TscCalibration::update(uint64_t tsc, uint64_t ns, TscScale* scale) {
  if (!m_started || tsc <= m_tsc0 || ns <= m_ns0) return false;
  if (!m_scaled && ns - m_ns0 < kFirstAfterNs) return false;
  // ns per tick, as a 32.32 fixed-point number: the average since the first pair.
  const uint64_t rate =
      static_cast<uint64_t>((static_cast<unsigned __int128>(ns - m_ns0) << 32) / (tsc - m_tsc0));
  if (rate == 0) return false;
  if (!m_scaled) {
    m_scale = TscScale{tsc, ns, rate};
    m_scaled = true;
  } else {
    const uint64_t here = m_scale.at(tsc);
    const int64_t lag = static_cast<int64_t>(ns - here);  // > 0: the scale runs behind
    if (lag > kStepNs) {
      m_scale = TscScale{tsc, ns, rate};
    } else {
      double turn = static_cast<double>(lag) / static_cast<double>(kSlewNs);
      turn = turn > kMaxSlew ? kMaxSlew : turn < -kMaxSlew ? -kMaxSlew : turn;
      m_scale =
          TscScale{tsc, here, static_cast<uint64_t>(static_cast<double>(rate) * (1.0 + turn))};
    }
  }
  *scale = m_scale;
  return true;
}

namespace {

#if HETOPT_HAVE_TSC
/// One TSC reading paired with one of CLOCK_MONOTONIC: the TSC in the middle of the narrowest of
/// three tries.
void readPair(uint64_t* tsc, uint64_t* ns) {
  uint64_t narrowest = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const uint64_t before = __rdtsc();
    const uint64_t mono = clockNs(CLOCK_MONOTONIC);
    const uint64_t after = __rdtsc();
    if (after >= before && after - before < narrowest) {
      narrowest = after - before;
      *tsc = before + narrowest / 2;
      *ns = mono;
    }
  }
}

/// "Invariant TSC" (CPUID 0x80000007, EDX bit 8): it ticks at one rate in every power state.
bool invariantTsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0u));
  if (a < 0x80000007u) return false;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0u));
  return (d >> 8) & 1u;
}
#endif

// The writer's state: one writer at a time (the recording thread, whose refresh skips a turn
// rather than wait). A flag, not a mutex: a forked child, its only thread, clears it.
std::atomic<bool> g_writing{false};
TscCalibration g_calibration;
uint64_t g_lastRefreshNs = 0;

}  // namespace

bool TscClock::kernelUsesTsc(const char* clocksourceText) {
  if (!clocksourceText) return false;
  const size_t n = strlen(clocksourceText);
  return n >= 3 && !strncmp(clocksourceText, "tsc", 3) &&
         (n == 3 || clocksourceText[3] == '\n' || clocksourceText[3] == ' ');
}

bool TscClock::start(bool allowed) {
  g_writing.store(false, std::memory_order_relaxed);
  stop();
#if HETOPT_HAVE_TSC
  if (!allowed || !invariantTsc()) return false;
  char text[64] = {};
  const int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0 || !kernelUsesTsc(text)) return false;
  uint64_t tsc = 0, ns = 0;
  readPair(&tsc, &ns);
  g_calibration.start(tsc, ns);
  g_lastRefreshNs = ns;
  return true;
#else
  (void)allowed;
  return false;
#endif
}

void TscClock::refresh() {
#if HETOPT_HAVE_TSC
  if (g_writing.exchange(true, std::memory_order_acquire)) return;
  const uint64_t now = clockNs(CLOCK_MONOTONIC);
  const uint64_t every =
      g_calibration.scaled() ? TscCalibration::kSlewNs : TscCalibration::kFirstAfterNs;
  uint64_t tsc = 0, ns = 0;
  TscScale scale;
  if (now - g_lastRefreshNs >= every) {
    readPair(&tsc, &ns);
    if (g_calibration.update(tsc, ns, &scale)) {
      g_lastRefreshNs = ns;
      publish(scale);
      s_on.store(true, std::memory_order_relaxed);
    }
  }
  g_writing.store(false, std::memory_order_release);
#endif
}

void TscClock::stop() {
  s_on.store(false, std::memory_order_relaxed);
  // A child forked while its parent's writer was mid-publish: an odd sequence would stay odd.
  const uint32_t seq = s_seq.load(std::memory_order_relaxed);
  if (seq & 1) s_seq.store(seq + 1, std::memory_order_release);
  g_calibration = TscCalibration{};
}

void TscClock::publish(const TscScale& s) {
  const uint32_t seq = s_seq.load(std::memory_order_relaxed);
  s_seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s_tsc.store(s.tsc, std::memory_order_relaxed);
  s_ns.store(s.ns, std::memory_order_relaxed);
  s_mult.store(s.mult, std::memory_order_relaxed);
  s_seq.store(seq + 2, std::memory_order_release);
}

}  // namespace hetopt::trace
