// SPDX-License-Identifier: MIT
/** @file Small helpers of the profile model; see profile.h. */
#include "analyzer/profile.h"

#include <algorithm>

namespace hetopt::analyzer {

void TransferStats::add(uint64_t size, uint64_t count, double ns) {
  if (count == 0) return;
  transfers += count;
  bytes += size * count;
  maxBytes = std::max(maxBytes, size);
  deviceNs += ns;
  for (SizeCount& s : sizes) {
    if (s.bytes == size) {
      s.count += count;
      return;
    }
  }
  sizes.push_back({size, count});
}

void TransferStats::finish() {
  // Largest volume first: the sizes that matter for the policy choice come first.
  std::sort(sizes.begin(), sizes.end(), [](const SizeCount& a, const SizeCount& b) {
    return a.bytes * a.count != b.bytes * b.count ? a.bytes * a.count > b.bytes * b.count
                                                  : a.bytes > b.bytes;
  });
  typicalBytes = sizes.empty() ? 0 : sizes.front().bytes;
}

const char* untrackedKindName(UntrackedMemory::Kind k) {
  switch (k) {
    case UntrackedMemory::Kind::Static: return "static";
    case UntrackedMemory::Kind::Stack: return "stack";
    case UntrackedMemory::Kind::Mmap: return "mmap";
    case UntrackedMemory::Kind::Heap: return "heap (untracked)";
    case UntrackedMemory::Kind::Unknown: break;
  }
  return "unknown";
}

bool predictOptimizedBreakdown(const AppProfile& p, Breakdown* out) {
  double saved = 0, savedH2d = 0, savedD2h = 0;
  bool any = false;
  for (const CandidateSite& c : p.candidates) {
    if (!c.gain.known || c.gain.standardNs <= 0) continue;
    any = true;
    double keep = std::min(1.0, std::max(0.0, c.gain.optimizedNs / c.gain.standardNs));
    savedH2d += c.h2d.deviceNs * (1 - keep);
    savedD2h += c.d2h.deviceNs * (1 - keep);
  }
  if (!any) return false;
  saved = savedH2d + savedD2h;
  Breakdown b = p.breakdown;
  // The communication part may have been scaled to fit the wall time: scale the saving with it.
  double commScale = p.eligibility.communicationNs > 0
                         ? b.communicationNs / p.eligibility.communicationNs
                         : 1.0;
  double cut = std::min(b.communicationNs, saved * commScale);
  b.communicationNs -= cut;
  b.totalNs -= cut;
  b.h2dNs -= savedH2d;
  b.d2hNs -= savedD2h;
  *out = b;
  return true;
}

}  // namespace hetopt::analyzer
