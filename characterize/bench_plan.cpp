// SPDX-License-Identifier: MIT
/** @file Sizes, memory and time of a characterization; see bench_plan.h.
 * makeBenchPlan (sizes under the budget), the phases' steps, PhaseEstimate (time left). */
#include "characterize/bench_plan.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace hetopt::characterize {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * kKiB;

// Doubling from 1 KiB: enough points per octave for the fit to find regime changes.
std::vector<uint64_t> sizeSeries(uint64_t max) {
  std::vector<uint64_t> out;
  for (uint64_t s = kKiB; s <= max; s *= 2) out.push_back(s);
  if (out.empty() || out.back() < max) out.push_back(max);
  return out;
}

}  // namespace

int RepPlan::runs(double opNs) const {
  const int least = opNs > slowNs ? slowMinReps : minReps;
  const double toTarget = opNs > 0 ? std::ceil(targetNs / opNs) : maxReps;
  const int reps = std::max(least, static_cast<int>(std::min<double>(toTarget, maxReps)));
  return warmup + reps;
}

std::string BenchPlan::memoryText() const {
  return "at most " + formatBytes(heldBytes) + " held at once (budget " + formatBytes(budget) +
         ": " + budgetSource + ")";
}

BenchPlan makeBenchPlan(const BenchConfig& config, uint64_t hostAvailable, uint64_t deviceGlobalMem,
                        uint64_t deviceMaxAlloc, bool deviceInHostMemory) {
  BenchPlan plan;
  if (config.quick) plan.reps = RepPlan{1, 7, 21, 5e6, 10e6, 3};
  if (config.memoryBudget) {
    plan.budget = config.memoryBudget;
    plan.budgetSource = "--max-memory";
  } else if (hostAvailable) {
    plan.budget = hostAvailable / 4;
    plan.budgetSource =
        "a quarter of the " + formatBytes(hostAvailable) + " available; --max-memory sets it";
  } else {
    plan.budget = 1024 * kMiB;
    plan.budgetSource = "free host memory unknown; --max-memory sets it";
  }
  uint64_t allocMax = config.quick ? 16 * kMiB : 768 * kMiB;
  uint64_t transferMax = config.quick ? 16 * kMiB : 1024 * kMiB;
  auto cap = [&](uint64_t* value, uint64_t limit, const char* which, const std::string& why) {
    if (limit == 0 || limit >= *value) return;
    *value = std::max<uint64_t>(limit, kKiB);
    plan.notes.push_back(std::string(which) + " sizes capped at " + formatBytes(*value) + " by " +
                         why);
  };
  if (config.maxSize) {
    cap(&allocMax, config.maxSize, "allocation", "--max-size");
    cap(&transferMax, config.maxSize, "transfer", "--max-size");
  }
  const std::string budgetWhy = "the memory budget of " + formatBytes(plan.budget);
  // An allocation size holds the policy's block and register's pre-existing memory.
  cap(&allocMax, plan.budget / 2, "allocation", budgetWhy);
  plan.allocSizes = sizeSeries(allocMax);
  plan.heldBytes = 2 * plan.allocSizes.back();

  // A transfer holds a host block and a device buffer: both host memory when the device lives
  // there. The largest size is one block of one policy.
  const uint64_t perBlock = deviceInHostMemory ? 2 : 1;
  const uint64_t deviceRoom = deviceGlobalMem / 2;
  cap(&transferMax, deviceMaxAlloc, "transfer", "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  cap(&transferMax, deviceRoom, "transfer", "device memory (half of it)");
  cap(&transferMax, plan.budget / perBlock, "transfer",
      budgetWhy +
          (deviceInHostMemory ? " (a block and its device buffer, both in host memory)" : ""));
  const uint64_t policies = static_cast<uint64_t>(plan.policies);
  bool saidConcurrency = false, saidGroups = false;
  for (uint64_t size : sizeSeries(transferMax)) {
    // (policy, queue) pairs whose block and buffer fit at once: at least one, by the caps above.
    uint64_t slots = plan.budget / (perBlock * size);
    if (deviceRoom) slots = std::min(slots, deviceRoom / size);
    slots = std::max<uint64_t>(slots, 1);
    const uint64_t wanted = size <= kConcurrencyMaxSize ? plan.maxConcurrency : 1;
    TransferStep st;
    st.size = size;
    if (slots >= policies) {
      st.policiesAtOnce = plan.policies;
      st.concurrency = static_cast<int>(std::min(wanted, slots / policies));
    } else {
      st.policiesAtOnce = static_cast<int>(slots);
      st.concurrency = 1;
    }
    if (st.concurrency < static_cast<int>(wanted) && !saidConcurrency) {
      saidConcurrency = true;
      plan.notes.push_back("from " + formatBytes(size) + ", at most " +
                           std::to_string(st.concurrency) +
                           " concurrent transfers, to stay in the memory budget");
    }
    if (st.policiesAtOnce < plan.policies && !saidGroups) {
      saidGroups = true;
      plan.notes.push_back("from " + formatBytes(size) + ", the policies are measured " +
                           std::to_string(st.policiesAtOnce) +
                           " at a time (one group after another, so less evenly), to stay in "
                           "the memory budget");
    }
    const uint64_t blocks = static_cast<uint64_t>(st.policiesAtOnce) * st.concurrency;
    st.hostBytes = blocks * size * perBlock;
    st.deviceBytes = blocks * size;
    plan.heldBytes = std::max(plan.heldBytes, st.hostBytes);
    plan.transfers.push_back(st);
  }
  return plan;
}

std::vector<WorkStep> allocationSteps(const BenchPlan& plan) {
  std::vector<WorkStep> steps;
  for (uint64_t size : plan.allocSizes)
    steps.push_back({static_cast<double>(size), plan.policies, false, formatBytes(size)});
  return steps;
}

std::vector<WorkStep> transferSteps(const BenchPlan& plan) {
  std::vector<WorkStep> steps;
  for (const TransferStep& t : plan.transfers) {
    const int groups = (plan.policies + t.policiesAtOnce - 1) / t.policiesAtOnce;
    for (int g = 0; g < groups; ++g) {
      const int ops = std::min(t.policiesAtOnce, plan.policies - g * t.policiesAtOnce);
      std::string of =
          groups > 1 ? " (group " + std::to_string(g + 1) + " of " + std::to_string(groups) + ")"
                     : "";
      for (const char* dir : {" h2d x", " d2h x"})
        for (int c = 1; c <= t.concurrency; ++c)
          steps.push_back({static_cast<double>(t.size) * c, ops, false,
                           formatBytes(t.size) + dir + std::to_string(c) + of});
      steps.push_back({static_cast<double>(t.size) * t.concurrency * ops, 1, true,
                       formatBytes(t.size) + " checked" + of});
    }
  }
  return steps;
}

PhaseEstimate::PhaseEstimate(std::vector<WorkStep> steps, const RepPlan& reps)
    : m_steps(std::move(steps)), m_reps(reps) {}

// The line through the op time at the smallest bytes seen and the latest at the largest; the
// prior's bandwidth until the largest is well past the latency (256 KiB).
void PhaseEstimate::Line::learn(double bytes, double ns) {
  if (smallBytes < 0 || bytes < smallBytes) smallBytes = bytes, smallNs = ns;
  if (bytes >= largeBytes) largeBytes = bytes, largeNs = ns;
  if (largeBytes >= 256.0 * kKiB && largeBytes > smallBytes)
    nsPerByte = std::max(0.0, (largeNs - smallNs) / (largeBytes - smallBytes));
  latencyNs = std::max(0.0, smallNs - nsPerByte * smallBytes);
}

double PhaseEstimate::stepNs(const WorkStep& s, const Line& ops, const Line& once) const {
  if (s.once) return once.opNs(s.bytes);
  const double op = ops.opNs(s.bytes);
  return s.ops * m_reps.runs(op) * op;
}

double PhaseEstimate::plannedSeconds(size_t step) const {
  return stepNs(m_steps[step], Line{}, Line{}) * 1e-9;
}

double PhaseEstimate::plannedSeconds() const {
  double s = 0;
  for (size_t i = 0; i < m_steps.size(); ++i) s += plannedSeconds(i);
  return s;
}

void PhaseEstimate::done(double ns, int runs) {
  if (m_next >= m_steps.size()) return;
  const WorkStep& s = m_steps[m_next++];
  if (runs <= 0 || !(ns > 0)) return;  // nothing ran (every policy of a group out)
  (s.once ? m_once : m_ops).learn(s.bytes, ns / runs);
}

double PhaseEstimate::secondsLeft() const {
  double ns = 0;
  for (size_t i = m_next; i < m_steps.size(); ++i) ns += stepNs(m_steps[i], m_ops, m_once);
  return ns * 1e-9;
}

}  // namespace hetopt::characterize
