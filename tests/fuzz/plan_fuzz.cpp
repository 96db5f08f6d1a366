// SPDX-License-Identifier: MIT
/**
 * @file libFuzzer target for the plan format (contracts/plan.h), which the shim reads inside other
 * people's processes. Any text must be accepted or rejected with a message, never crash; and what
 * the writer makes of an accepted plan must read back as the same plan.
 *
 * Inputs starting with 'S' build a plan from fields instead (path, key, device, policy split at
 * 0x01, then sizes and site keys): a plan the writer accepts must read back as itself. This is
 * how a program path with a blank in it was found to come back as a different plan.
 */
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "contracts/plan.h"

namespace {

using hetopt::Plan;
using hetopt::PlanSite;

bool samePlan(const Plan& a, const Plan& b) {
  if (a.programPath != b.programPath || a.programKey != b.programKey || a.device != b.device ||
      a.poolPolicy != b.poolPolicy || a.poolBytes != b.poolBytes ||
      a.sites.size() != b.sites.size())
    return false;
  if (a.buildAheadRecipe != b.buildAheadRecipe || a.buildAheadPrograms != b.buildAheadPrograms ||
      a.buildAheadNs != b.buildAheadNs)
    return false;
  if (a.earlyContext != b.earlyContext || a.driverLate != b.driverLate ||
      a.startupOnly() != b.startupOnly())
    return false;
  if (a.directAllocation != b.directAllocation || a.hasProgramStamp != b.hasProgramStamp ||
      (a.hasProgramStamp && !(a.programStamp == b.programStamp)))
    return false;
  auto sameProfile = [](const hetopt::SiteProfile& x, const hetopt::SiteProfile& y) {
    return x.allocations == y.allocations && x.minAllocBytes == y.minAllocBytes &&
           x.maxAllocBytes == y.maxAllocBytes && x.typicalAllocBytes == y.typicalAllocBytes &&
           x.peakLiveBytes == y.peakLiveBytes && x.peakLiveBlocks == y.peakLiveBlocks;
  };
  for (size_t i = 0; i < a.sites.size(); ++i)
    if (a.sites[i].key != b.sites[i].key || a.sites[i].minBytes != b.sites[i].minBytes ||
        a.sites[i].maxBytes != b.sites[i].maxBytes || a.sites[i].profiled != b.sites[i].profiled ||
        (a.sites[i].profiled && !sameProfile(a.sites[i].profile, b.sites[i].profile)))
      return false;
  if (a.staticRanges.size() != b.staticRanges.size() || a.mmapMinBytes != b.mmapMinBytes ||
      a.mmapMaxBytes != b.mmapMaxBytes)
    return false;
  for (size_t i = 0; i < a.staticRanges.size(); ++i)
    if (a.staticRanges[i].moduleKey != b.staticRanges[i].moduleKey ||
        a.staticRanges[i].offset != b.staticRanges[i].offset ||
        a.staticRanges[i].bytes != b.staticRanges[i].bytes)
      return false;
  return true;
}

// A plan the writer accepts reads back unchanged.
void checkRoundTrip(const Plan& plan) {
  if (!plan.unwritableReason().empty()) return;
  Plan back;
  std::string error;
  if (!hetopt::parsePlan(plan.serialize(), &back, &error)) __builtin_trap();
  if (!samePlan(plan, back)) __builtin_trap();
}

uint64_t takeU64(const uint8_t*& p, const uint8_t* end) {
  uint64_t v = 0;
  size_t n = std::min<size_t>(8, end - p);
  memcpy(&v, p, n);
  p += n;
  return v;
}

Plan planFromFields(const uint8_t* data, size_t size) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  std::string fields[4];
  for (std::string& f : fields) {
    const uint8_t* stop = static_cast<const uint8_t*>(memchr(p, 1, end - p));
    if (!stop) stop = end;
    f.assign(reinterpret_cast<const char*>(p), stop - p);
    p = stop == end ? end : stop + 1;
  }
  Plan plan;
  plan.programPath = fields[0];
  plan.programKey = fields[1];
  plan.device = fields[2];
  plan.poolPolicy = fields[3];
  plan.poolBytes = takeU64(p, end);
  while (p < end) {
    PlanSite s;
    s.key = takeU64(p, end);
    s.minBytes = takeU64(p, end) >> (p < end ? *p++ % 64 : 0);
    s.maxBytes = std::max(s.minBytes, takeU64(p, end));
    plan.sites.push_back(s);
  }
  std::stable_sort(plan.sites.begin(), plan.sites.end(),
                   [](const PlanSite& a, const PlanSite& b) { return a.key < b.key; });
  return plan;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == 'S') {
    checkRoundTrip(planFromFields(data + 1, size - 1));
    return 0;
  }
  Plan plan;
  std::string error;
  if (!hetopt::parsePlan(std::string(reinterpret_cast<const char*>(data), size), &plan, &error)) {
    if (error.empty()) __builtin_trap();  // a rejection must say why
    return 0;
  }
  for (const PlanSite& s : plan.sites) (void)plan.find(s.key, s.minBytes);
  checkRoundTrip(plan);
  return 0;
}
