// SPDX-License-Identifier: MIT
/** @file Trace conformance; see conformance.h.
 * Summing the plan's profiles into limits; admit() checks them with relaxed loads. */
#include "shim/core/conformance.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "common/compiler.h"
#include "common/log.h"
#include "common/units.h"

namespace hetopt::shim {

void Conformance::expect(const Plan& plan) {
  m_wholeRun = !plan.sites.empty();
  m_peakBlocks = m_peakBytes = m_allocations = 0;
  for (const PlanSite& s : plan.sites) {
    if (!s.profiled) m_wholeRun = false;
    m_peakBlocks += s.profile.peakLiveBlocks;
    m_peakBytes += s.profile.peakLiveBytes;
    m_allocations += s.profile.allocations;
  }
  // Saturating: a hand plan may carry any numbers.
  auto limit = [](uint64_t factor, uint64_t v, uint64_t slack) {
    uint64_t r;
    if (__builtin_mul_overflow(factor, v, &r) || __builtin_add_overflow(r, slack, &r))
      return UINT64_MAX;
    return r;
  };
  m_blocksLimit = limit(kLiveFactor, m_peakBlocks, kLiveBlocksSlack);
  m_bytesLimit = limit(kLiveFactor, m_peakBytes, kLiveBytesSlack);
  m_idleLimit = std::max(limit(kIdleFactor, m_allocations, 0), kIdleMinimum);
}

void Conformance::diverge(const char* fmt, ...) noexcept {
  int expected = kConformant;
  if (!m_state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m_reason, sizeof m_reason, fmt, ap);
  va_end(ap);
  m_state.store(kDiverged, std::memory_order_release);
  debug("the program diverged from its profile (%s); no new allocation is redirected", m_reason);
}

bool Conformance::admit(const PlanSite& site, uint64_t size, const Usage& now) noexcept {
  if (HETOPT_UNLIKELY(m_state.load(std::memory_order_relaxed) != kConformant)) return false;
  char a[kUnitTextSize], b[kUnitTextSize];  // no allocation: this runs in the malloc path
  const SiteProfile& p = site.profile;
  if (site.profiled && size / kSizeFactor > p.maxAllocBytes) {
    diverge("site %016" PRIx64 " allocated %s, profiled at most %s", site.key,
            formatBytes(a, sizeof a, size), formatBytes(b, sizeof b, p.maxAllocBytes));
    return false;
  }
  if (site.profiled && size < p.minAllocBytes / kSmallFactor) {
    diverge("site %016" PRIx64 " allocated %s, profiled at least %s", site.key,
            formatBytes(a, sizeof a, size), formatBytes(b, sizeof b, p.minAllocBytes));
    return false;
  }
  if (!m_wholeRun) return true;
  if (now.liveBlocks >= m_blocksLimit) {
    diverge("%" PRIu64 " redirected blocks alive at once, profiled peak %" PRIu64, now.liveBlocks,
            m_peakBlocks);
    return false;
  }
  if (now.liveBytes + size > m_bytesLimit) {
    diverge("%s of redirected memory alive at once, profiled peak %s",
            formatBytes(a, sizeof a, now.liveBytes + size), formatBytes(b, sizeof b, m_peakBytes));
    return false;
  }
  if (now.transfers == 0 && now.served >= m_idleLimit) {
    diverge("%" PRIu64 " redirected allocations and none fed a transfer (profiled %" PRIu64
            " allocations)",
            now.served, m_allocations);
    return false;
  }
  return true;
}

}  // namespace hetopt::shim
