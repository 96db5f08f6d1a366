// SPDX-License-Identifier: MIT
/**
 * @file Trace conformance for optimize mode: stop redirecting new allocations once the program
 * behaves differently from the run that was profiled, because then the plan (which sites, how
 * large a pool, which policy for which sizes) no longer describes it. The checks compare the run
 * against what the trace saw per site (contracts/plan.h SiteProfile) with wide slack, since a
 * profile is one run and inputs vary a little. Divergence is final: no new allocation is
 * redirected, and everything already handed out stays valid and is freed as usual.
 */
#pragma once
#include <atomic>
#include <cstdint>

#include "contracts/plan.h"

namespace hetopt::shim {

class Conformance {
 public:
  /// Size: a site allocating more than kSizeFactor x its profiled largest block, or less than
  /// 1/kSmallFactor of its smallest. Above: the pool was sized for the profiled peak (x1.25), so
  /// it would overflow soon anyway, and the curves chose the policy for other sizes. Far below:
  /// small transfers gain little from pinning (16 KiB on the H200: 1.6 vs 1.8 GB/s), so pinned
  /// memory would be spent for nothing.
  static constexpr uint64_t kSizeFactor = 4, kSmallFactor = 16;
  /// Live memory: more redirected blocks (bytes) alive at once than kLiveFactor x the sum of the
  /// sites' profiled peaks (+ kLiveBlocksSlack blocks, kLiveBytesSlack bytes): the program holds
  /// far more than it did. The sum of per-site peaks already over-estimates the joint peak.
  static constexpr uint64_t kLiveFactor = 4, kLiveBlocksSlack = 16, kLiveBytesSlack = 64ull << 20;
  /// No transfer: kIdleFactor x the profiled allocation count (at least kIdleMinimum) redirected
  /// allocations and not one transfer from redirected memory: the memory does not feed the device
  /// as it did. The allocation count alone is no divergence: the trace is compressed independently
  /// of loop trip counts, so more iterations of the same loop still conform.
  static constexpr uint64_t kIdleFactor = 4, kIdleMinimum = 64;

  /// What the run has done so far, as the interceptor counts it.
  struct Usage {
    uint64_t served = 0;      ///< allocations redirected
    uint64_t liveBlocks = 0;  ///< of those, not freed yet
    uint64_t liveBytes = 0;   ///< their usable bytes
    uint64_t transfers = 0;   ///< transfers whose host memory was redirected memory
  };

  /// Sums the profiled expectations; the whole-run checks need every site profiled. Sites without
  /// a profile (hand-written plans) are not checked.
  void expect(const Plan& plan);
  /// Before redirecting an allocation of `size` bytes at `site`: false once the program diverged
  /// (now, with the reason kept, or earlier). Lock-free: relaxed loads, one CAS on the way to
  /// diverging.
  bool admit(const PlanSite& site, uint64_t size, const Usage& now) noexcept;
  bool diverged() const noexcept { return m_state.load(std::memory_order_acquire) == kDiverged; }
  /// Why it diverged ("" while conformant).
  const char* reason() const noexcept { return diverged() ? m_reason : ""; }
  /// Stops redirection for a reason found elsewhere; the first reason wins.
  void diverge(const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

 private:
  static constexpr int kConformant = 0, kWriting = 1, kDiverged = 2;
  bool m_wholeRun = false;
  uint64_t m_peakBlocks = 0, m_peakBytes = 0, m_allocations = 0;
  uint64_t m_blocksLimit = UINT64_MAX, m_bytesLimit = UINT64_MAX, m_idleLimit = UINT64_MAX;
  std::atomic<int> m_state{kConformant};
  char m_reason[200] = {};
};

}  // namespace hetopt::shim
