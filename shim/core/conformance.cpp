// SPDX-License-Identifier: MIT
/** @file Trace conformance; see conformance.h. */
#include "shim/core/conformance.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace hetopt::shim {
namespace {

// "64.0 MiB", "32.0 KiB" into a caller buffer (no allocation: this runs in the malloc path).
const char* mibText(uint64_t bytes, char* buf, size_t len) {
  if (bytes >= (1u << 20))
    snprintf(buf, len, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else
    snprintf(buf, len, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return buf;
}

}  // namespace

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
    if (__builtin_mul_overflow(factor, v, &r) || __builtin_add_overflow(r, slack, &r)) return UINT64_MAX;
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
  if (m_state.load(std::memory_order_relaxed) != kConformant) [[unlikely]]
    return false;
  char a[32], b[32];
  const SiteProfile& p = site.profile;
  if (site.profiled && size / kSizeFactor > p.maxAllocBytes) {
    diverge("site %016" PRIx64 " allocated %s, profiled at most %s", site.key,
            mibText(size, a, sizeof a), mibText(p.maxAllocBytes, b, sizeof b));
    return false;
  }
  if (site.profiled && size < p.minAllocBytes / kSmallFactor) {
    diverge("site %016" PRIx64 " allocated %s, profiled at least %s", site.key,
            mibText(size, a, sizeof a), mibText(p.minAllocBytes, b, sizeof b));
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
            mibText(now.liveBytes + size, a, sizeof a), mibText(m_peakBytes, b, sizeof b));
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
