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

}  // namespace hetopt::analyzer
