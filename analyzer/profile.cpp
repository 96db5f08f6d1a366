// SPDX-License-Identifier: MIT
/** @file Small helpers of the profile model; see profile.h.
 * Transfer statistics, untracked memory's names, predicted and measured breakdowns. */
#include "analyzer/profile.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"

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

std::string GainPrediction::savingText() const {
  const double ns = savingNs();
  return (ns < 0 ? "costs " : "saves ") + formatDuration(std::abs(ns));
}

void Breakdown::fitOverheads() {
  // The set-up is host time in other calls than the enqueues and waits: what is left of the wall
  // time beside it holds the rest.
  setupNs = std::clamp(setupNs, 0.0, std::max(0.0, totalNs));
  const double room = std::max(0.0, totalNs - setupNs);
  const double device = h2dNs + d2hNs + launchNs;
  if (device > room && device > 0) {
    const double scale = room / device;
    h2dNs *= scale;
    d2hNs *= scale;
    launchNs *= scale;
  }
  dispatchSyncNs = std::clamp(dispatchSyncNs, 0.0, std::max(0.0, room - h2dNs - d2hNs - launchNs));
}

const char* untrackedKindName(UntrackedMemory::Kind k) {
  switch (k) {
    case UntrackedMemory::Kind::Static:
      return "static";
    case UntrackedMemory::Kind::Stack:
      return "stack";
    case UntrackedMemory::Kind::Mmap:
      return "mmap";
    case UntrackedMemory::Kind::Heap:
      return "heap (untracked)";
    case UntrackedMemory::Kind::Unknown:
      break;
  }
  return "unknown";
}

namespace {

// What pinning saves of the traced device transfer time, per direction: each candidate's traced
// time times its predicted saving ratio, times `share(candidate)` (the part of its transfers that
// pinned memory served). False when no candidate has a prediction.
template <typename Share>
bool transferSaving(const AppProfile& p, Share share, double* h2d, double* d2h) {
  bool any = false;
  *h2d = *d2h = 0;
  for (const CandidateSite& c : p.candidates) {
    if (!c.gain.known || c.gain.standardNs <= 0) continue;
    any = true;
    const double keep = std::min(1.0, std::max(0.0, c.gain.optimizedNs / c.gain.standardNs));
    const double s = share(c);
    *h2d += c.h2d.deviceNs * (1 - keep) * s;
    *d2h += c.d2h.deviceNs * (1 - keep) * s;
  }
  return any;
}

// The breakdown's communication part less `savedH2d + savedD2h` of transfer time.
void cutCommunication(const AppProfile& p, double savedH2d, double savedD2h, Breakdown* b) {
  // The communication part may have been scaled to fit the wall time: scale the saving with it.
  const double commScale =
      p.eligibility.communicationNs > 0 ? b->communicationNs / p.eligibility.communicationNs : 1.0;
  const double cut = std::min(b->communicationNs, (savedH2d + savedD2h) * commScale);
  b->communicationNs -= cut;
  b->totalNs -= cut;
  b->h2dNs -= savedH2d;
  b->d2hNs -= savedD2h;
}

}  // namespace

bool predictOptimizedBreakdown(const AppProfile& p, Breakdown* out) {
  double savedH2d = 0, savedD2h = 0;
  if (!transferSaving(
          p, [](const CandidateSite&) { return 1.0; }, &savedH2d, &savedD2h))
    return false;
  Breakdown b = p.breakdown;
  cutCommunication(p, savedH2d, savedD2h, &b);
  *out = b;
  return true;
}

bool runBreakdown(const AppProfile& p, const RunRecord& record, Breakdown* out) {
  auto pinnedShare = [&record](const CandidateSite& c) {
    for (const RunSiteCounts& s : record.sites)
      if (s.key == c.siteKey && s.transfers > 0)
        return static_cast<double>(s.pinned) / static_cast<double>(s.transfers);
    return 0.0;
  };
  double savedH2d = 0, savedD2h = 0;
  const bool estimated = transferSaving(p, pinnedShare, &savedH2d, &savedD2h);
  Breakdown b = p.breakdown;
  cutCommunication(p, savedH2d, savedD2h, &b);
  // The measured time; the device parts as estimated, never more than it holds.
  b.totalNs = static_cast<double>(record.wallNs);
  b.kernelNs = std::min(b.kernelNs, b.totalNs);
  b.communicationNs = std::min(b.communicationNs, b.totalNs - b.kernelNs);
  b.cpuSyncNs = b.totalNs - b.kernelNs - b.communicationNs;
  b.recordingNs = 0;
  *out = b;
  return estimated;
}

}  // namespace hetopt::analyzer
