// SPDX-License-Identifier: MIT
/**
 * @file From an application profile (analyzer) to the shim's optimization plan (common/plan.h):
 * which sites, which pool policy, how big a pool, and which untracked memory (static data,
 * anonymous mappings) to register in place. The decision "optimize or not" is made here, with
 * one line saying why not: no profile, a profile of another build, an ineligible program, or no
 * site the curves say gains on this machine.
 */
#pragma once
#include <string>

#include "analyzer/profile.h"
#include "common/plan.h"

namespace hetopt::cli {

struct PlanOptions {
  std::string forcedPolicy;  ///< non-empty: every candidate site, this pool policy (experiments, CI)
  /// Every static range and anonymous mapping that can be registered in place is planned,
  /// whatever the register curves say (`--policy register`: experiments, CI on PoCL).
  bool forceRegistrations = false;
  bool ignoreEligibility = false;
  bool directAllocation = false;  ///< --no-pool: every candidate allocated by the policy directly
  double poolSlack = 1.25;   ///< pool = slack * sum of the sites' peak live bytes (+ 1 MiB)
};

/// Builds the plan for `profile`. False with *whyNot (one line) when the program should run
/// untouched.
bool buildPlan(const analyzer::AppProfile& profile, const PlanOptions& options, Plan* plan,
               std::string* whyNot);

/// A policy the pool can be backed by for a decision's policy: register (in place, no pool) maps to
/// hybrid, the pooled policy with the same transfer speed; standard means no pool at all ("").
std::string poolPolicyFor(const std::string& decisionPolicy);

}  // namespace hetopt::cli
