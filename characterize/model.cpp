// SPDX-License-Identifier: MIT
/** @file Names and small helpers of the characterization model; see model.h.
 * Enum names both ways, quantiles and a sample's summary, lookups in a run. */
#include "characterize/model.h"

#include <algorithm>

namespace hetopt::characterize {
namespace {

template <typename E, size_t N>
bool fromName(const std::string& name, const char* const (&names)[N], E* out) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

constexpr const char* kMeasureNames[] = {"alloc", "free", "h2d", "d2h"};
constexpr const char* kDirectionNames[] = {"h2d", "d2h", "roundtrip"};
constexpr const char* kAllocModeNames[] = {"plain", "direct", "pool"};
constexpr const char* kAvailabilityNames[] = {"available", "partial", "unavailable"};

// Quantile by linear interpolation between order statistics of a sorted vector.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * (sorted.size() - 1);
  size_t i = static_cast<size_t>(pos);
  if (i + 1 >= sorted.size()) return sorted.back();
  double frac = pos - i;
  return sorted[i] * (1 - frac) + sorted[i + 1] * frac;
}

}  // namespace

const char* measureName(Measure m) { return kMeasureNames[static_cast<int>(m)]; }
bool measureFromName(const std::string& name, Measure* out) {
  return fromName(name, kMeasureNames, out);
}
const char* directionName(Direction d) { return kDirectionNames[static_cast<int>(d)]; }
bool directionFromName(const std::string& name, Direction* out) {
  return fromName(name, kDirectionNames, out);
}
const char* allocModeName(AllocMode m) { return kAllocModeNames[static_cast<int>(m)]; }
bool allocModeFromName(const std::string& name, AllocMode* out) {
  return fromName(name, kAllocModeNames, out);
}
const char* availabilityName(PolicyAvailability::State s) {
  return kAvailabilityNames[static_cast<int>(s)];
}

std::string RunInfo::describe() const {
  return key.platformName + " / " + key.deviceName + " [" + deviceType + ", driver " +
         key.driverVersion + "]";
}

void Sample::summarize() {
  std::vector<double> sorted = timesNs;
  std::sort(sorted.begin(), sorted.end());
  medianNs = quantile(sorted, 0.5);
  q1Ns = quantile(sorted, 0.25);
  q3Ns = quantile(sorted, 0.75);
  minNs = sorted.empty() ? 0 : sorted.front();
  maxNs = sorted.empty() ? 0 : sorted.back();
}

double Sample::bandwidthGBs() const {
  return medianNs > 0 ? static_cast<double>(size) * concurrency / medianNs : 0;
}

const Fit* CharacterizationRun::findFit(Measure kind, PolicyKind policy, int concurrency) const {
  for (const Fit& f : fits)
    if (f.kind == kind && f.policy == policy && f.concurrency == concurrency) return &f;
  return nullptr;
}

const PolicyAvailability* CharacterizationRun::findPolicy(PolicyKind policy) const {
  for (const PolicyAvailability& p : policies)
    if (p.policy == policy) return &p;
  return nullptr;
}

}  // namespace hetopt::characterize
