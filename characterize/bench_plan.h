// SPDX-License-Identifier: MIT
/**
 * @file What `hetopt characterize` does on one device, decided before it starts: the sizes, how
 * many policies and concurrent transfers hold memory at once at each transfer size so that what
 * it holds stays under one memory budget, the repetitions, and the time each phase has left
 * (from the plan, re-estimated from the times measured so far). Arithmetic only, no OpenCL and no
 * clock: bench.cpp runs the plan and feeds the estimate; tests/characterize/bench_test.cpp.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hetopt::characterize {

/// How many times a point runs: warm-up runs, then repetitions until both a minimum count and a
/// time target are reached (fewer for points that take long: a 768 MiB pinned allocation costs
/// ~0.4 s); all repetitions are kept, the median and quartiles summarize them.
struct RepPlan {
  int warmup = 1;
  int minReps = 5;
  int maxReps = 25;
  double targetNs = 20e6;  ///< keep repeating (up to maxReps) until this much time was measured
  double slowNs = 20e6;    ///< a warm-up slower than this ...
  int slowMinReps = 3;     ///< ... lowers minReps to this

  /// Runs (warm-up included) of an operation that takes `opNs` each.
  int runs(double opNs) const;
};

struct BenchConfig {
  bool quick = false;         ///< CI mode: fewer, smaller sizes and repetitions
  uint64_t maxSize = 0;       ///< --max-size (0: none)
  uint64_t memoryBudget = 0;  ///< --max-memory (0: a quarter of the free host memory)
};

/// One transfer size. Its policies are measured in groups of policiesAtOnce, one group after
/// another (interleaved within a group); each policy of a group holds `concurrency` host blocks of
/// `size` and as many device buffers, and 1..concurrency concurrent transfers are measured.
struct TransferStep {
  uint64_t size = 0;
  int concurrency = 1;
  int policiesAtOnce = 1;
  uint64_t hostBytes = 0;    ///< host memory a group holds (its device buffers too when the
                             ///< device lives in host memory)
  uint64_t deviceBytes = 0;  ///< device memory a group holds
};

/// Sizes, repetitions and memory for one device, after every cap.
struct BenchPlan {
  std::vector<uint64_t> allocSizes;
  std::vector<TransferStep> transfers;
  int maxConcurrency = 4;
  int policies = 5;  ///< policies measured (groups are formed in kAllPolicies order)
  RepPlan reps;
  uint64_t budget = 0;             ///< host memory the measurements may hold at once
  std::string budgetSource;        ///< where it comes from ("--max-memory", "a quarter of ...")
  uint64_t heldBytes = 0;          ///< the most they hold at once, in either phase: <= budget
  std::vector<std::string> notes;  ///< what the budget and the device cut short, for the user

  /// "at most 3.9 GiB held at once (budget 5.4 GiB: a quarter of the 21.6 GiB available;
  /// --max-memory sets it)".
  std::string memoryText() const;
};

/// Concurrent transfers are measured up to this size; larger sizes one transfer at a time (they
/// extend the curves to what programs move; the concurrency figures are taken below it).
inline constexpr uint64_t kConcurrencyMaxSize = 256ull << 20;

/// Default ranges: allocation 1 KiB..768 MiB, transfers 1 KiB..1 GiB, doubling (quick: both
/// 1 KiB..16 MiB), cut by maxSize. Memory: the budget is config.memoryBudget, else a quarter of
/// hostAvailable (other processes may grow while this runs, and the OOM killer is no answer;
/// 1 GiB when hostAvailable is 0, unknown).
/// An allocation size holds two blocks (one of the policy, register's pre-existing memory); a
/// transfer size's group holds a host block per policy and queue, plus its device buffer when the
/// device lives in host memory. Each transfer size measures all policies at once with up to
/// maxConcurrency transfers while that fits the budget and half the device memory, else fewer
/// concurrent transfers, else fewer policies at once; the sizes end where one block (and its
/// buffer) no longer fits, or at the device's largest allocation.
BenchPlan makeBenchPlan(const BenchConfig& config, uint64_t hostAvailable, uint64_t deviceGlobalMem,
                        uint64_t deviceMaxAlloc, bool deviceInHostMemory);

/// One step of a phase as bench.cpp runs it, and the unit its progress advances by: `ops`
/// operations (one per policy, interleaved) of `bytes` each (a transfer step's bytes are those of
/// all its concurrent transfers), repeated as RepPlan says; or, `once`, a group's blocks being
/// allocated, filled, verified and released (`bytes` in all).
struct WorkStep {
  double bytes = 0;
  int ops = 1;
  bool once = false;
  std::string detail;  ///< what the bar names while it runs ("64 MiB d2h x2")
};

/// The steps of each phase, in the order bench.cpp runs them.
std::vector<WorkStep> allocationSteps(const BenchPlan& plan);
std::vector<WorkStep> transferSteps(const BenchPlan& plan);

/// The time a phase has left: every step not yet done, priced by cost lines (latency + bytes /
/// bandwidth; one for repeated operations, one for `once` steps) learnt from the steps done so
/// far, with the repetitions RepPlan makes at that cost. Before a step is done the lines are a
/// prior (20 us + bytes at 5 GB/s). Sizes double step by step, so the steps left are priced by
/// their bytes, not counted: the estimate stays put while the large sizes run.
class PhaseEstimate {
 public:
  PhaseEstimate(std::vector<WorkStep> steps, const RepPlan& reps);
  const std::vector<WorkStep>& steps() const { return m_steps; }
  /// Seconds the step will take at the prior: the progress bar's units (fixed at the start).
  double plannedSeconds(size_t step) const;
  double plannedSeconds() const;  ///< all steps
  /// The next step is done: it took `ns`, in `runs` runs of its operations (1 for a `once` step).
  void done(double ns, int runs);
  size_t stepsDone() const { return m_next; }
  double secondsLeft() const;

 private:
  struct Line {
    double latencyNs = 20e3, nsPerByte = 0.2;  // the prior
    double smallBytes = -1, smallNs = 0, largeBytes = -1, largeNs = 0;
    void learn(double bytes, double ns);
    double opNs(double bytes) const { return latencyNs + nsPerByte * bytes; }
  };
  double stepNs(const WorkStep& s, const Line& ops, const Line& once) const;

  std::vector<WorkStep> m_steps;
  RepPlan m_reps;
  Line m_ops, m_once;
  size_t m_next = 0;
};

}  // namespace hetopt::characterize
