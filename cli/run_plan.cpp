// SPDX-License-Identifier: MIT
/** @file Profile -> plan; see run_plan.h. */
#include "cli/run_plan.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace hetopt::cli {

std::string poolPolicyFor(const std::string& decisionPolicy) {
  if (decisionPolicy == "register") return "hybrid";
  if (decisionPolicy == "opencl" || decisionPolicy == "hybrid" || decisionPolicy == "locked")
    return decisionPolicy;
  return "";
}

namespace {

// Untracked memory the register curves say gains (or all of it, forced): static ranges by module
// and offset; anonymous mappings by size, from the smallest transferred range (a mapping holds at
// least that) to the largest mapping seen, so that no unrelated larger mapping gets pinned.
void addRegistrations(const analyzer::AppProfile& profile, const PlanOptions& options, Plan* plan) {
  for (const analyzer::UntrackedMemory& u : profile.untracked) {
    if (!u.registrable() || u.regionBytes == 0) continue;
    if (!options.forceRegistrations && (!u.gain.known || u.gain.savingNs() <= 0)) continue;
    if (u.kind == analyzer::UntrackedMemory::Kind::Static) {
      plan->staticRanges.push_back({u.moduleKey, u.moduleOffset, u.regionBytes});
      continue;
    }
    uint64_t hi = std::max(u.mapBytes, u.regionBytes);
    plan->mmapMinBytes = plan->registersMappings() ? std::min(plan->mmapMinBytes, u.regionBytes)
                                                   : u.regionBytes;
    plan->mmapMaxBytes = std::max(plan->mmapMaxBytes, hi);
  }
}

}  // namespace

bool buildPlan(const analyzer::AppProfile& profile, const PlanOptions& options, Plan* plan,
               std::string* whyNot) {
  *plan = Plan();
  if (!profile.eligibility.eligible && !options.ignoreEligibility) {
    *whyNot = "not worth optimizing: " + profile.eligibility.reason;
    return false;
  }
  bool registrable = false;
  for (const analyzer::UntrackedMemory& u : profile.untracked) registrable |= u.registrable();
  if (profile.candidates.empty() && !registrable) {
    *whyNot = "no allocation site feeds host<->device transfers";
    return false;
  }
  uint64_t liveBytes = 0;
  std::string policy = poolPolicyFor(options.forcedPolicy);
  if (!options.forcedPolicy.empty() && policy.empty()) {
    *whyNot = "policy '" + options.forcedPolicy + "' cannot back a pool (use opencl, hybrid, locked)";
    return false;
  }
  for (const analyzer::CandidateSite& site : profile.candidates) {  // most valuable first
    std::string sitePolicy = options.forcedPolicy.empty() ? poolPolicyFor(site.gain.policy) : policy;
    if (sitePolicy.empty()) continue;
    // Unless forced: only sites the curves say repay their share of the pool.
    if (options.forcedPolicy.empty() && (!site.gain.known || site.gain.savingNs() <= 0)) continue;
    if (policy.empty()) policy = sitePolicy;  // one pool: the most valuable site's policy
    PlanSite planned;
    planned.key = site.siteKey;
    // What the trace saw there, for the shim's conformance check (shim/core/conformance.h).
    planned.profiled = site.allocations > 0 && site.minAllocBytes <= site.maxAllocBytes;
    if (planned.profiled)
      planned.profile = {site.allocations, site.minAllocBytes, site.maxAllocBytes,
                         std::clamp(site.typicalAllocBytes, site.minAllocBytes, site.maxAllocBytes),
                         site.peakLiveBytes, site.peakLiveBlocks};
    plan->sites.push_back(planned);
    liveBytes = site.peakLiveBytes > UINT64_MAX - liveBytes ? UINT64_MAX : liveBytes + site.peakLiveBytes;
  }
  addRegistrations(profile, options, plan);
  if (plan->sites.empty() && !plan->hasRegistrations()) {
    *whyNot = "pinning does not pay for this program's transfers on " + profile.device +
              " (see `hetopt analyze`)";
    return false;
  }
  plan->programPath = profile.program.path;
  plan->programKey = profile.program.key();
  plan->device = profile.device;
  if (plan->sites.empty()) {
    plan->poolPolicy = "none";  // registrations only: the shim's context, no pool
    plan->poolBytes = 0;
    return true;
  }
  plan->poolPolicy = policy;
  plan->directAllocation = options.directAllocation;
  // The sizes come from a DB file: a damaged one must give a message, not an overflowing pool.
  const double want = static_cast<double>(liveBytes) * options.poolSlack + (1u << 20);
  if (!(want < 0x1p50)) {
    *whyNot = "the profile asks for an implausible pool (" + std::to_string(want) +
              " bytes); trace the program again";
    return false;
  }
  const uint64_t bytes = static_cast<uint64_t>(want);
  plan->poolBytes = (bytes + (1u << 20) - 1) & ~uint64_t{(1u << 20) - 1};
  return true;
}

}  // namespace hetopt::cli
