// SPDX-License-Identifier: MIT
/**
 * @file The micro-benchmarks of `hetopt characterize`: allocation (and free) time per policy and
 * size, and host<->device transfer time from each policy's memory with 1..4 concurrent transfers
 * on separate queues. At each size the policies are measured interleaved, repetition by
 * repetition, so that noise that comes and goes over time hits all of them alike; every transfer's
 * data is verified, so one that silently does nothing fails the run.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "characterize/model.h"
#include "characterize/progress.h"
#include "common/cl_select.h"

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
};

struct BenchConfig {
  bool quick = false;    ///< CI mode: fewer, smaller sizes and repetitions
  uint64_t maxSize = 0;  ///< --max-size (0: none)
};

/// Sizes and repetitions for one device, after every cap.
struct BenchPlan {
  std::vector<uint64_t> allocSizes;
  std::vector<uint64_t> transferSizes;
  int maxConcurrency = 4;
  RepPlan reps;
  std::vector<std::string> notes;  ///< why sizes were capped, for the user
};

/// Default ranges: allocation 1 KiB..768 MiB, transfers 1 KiB..256 MiB, doubling (quick: both
/// 1 KiB..16 MiB). Capped by maxSize, by free host memory (hostAvailable: 4 host blocks per policy
/// per size, plus as many device buffers when the device lives in host memory, in a quarter of it)
/// and by the device (max allocation size; 4 buffers per policy in half the global memory).
BenchPlan makeBenchPlan(const BenchConfig& config, uint64_t hostAvailable, uint64_t deviceGlobalMem,
                        uint64_t deviceMaxAlloc, bool deviceInHostMemory);

/// Total progress units a plan reports (for Progress::start).
double planWork(const BenchPlan& plan);

/// Measures `device` (every policy, every size) into `run` (info, policies, samples; no fits).
/// False with a one-line *error when OpenCL fails or a transfer returns wrong data. Host data is
/// a non-zero pattern that differs per block and per 64 KiB chunk; after each size's D2H runs
/// every block is compared with what was written. Every OpenCL status is checked. Memory for a
/// size is allocated fresh through the policy, as an application would, and released before the
/// next size.
bool runBenchmarks(const ClDevice& device, const BenchConfig& config, Progress* progress,
                   CharacterizationRun* run, std::string* error);

/// The key and descriptive info of `device` on this host, as stored.
RunInfo describeRun(const ClDevice& device, bool quick);

/// Pattern helpers (exposed for tests): fill with a non-zero pattern that depends on `seed`, on
/// the position of each 64 KiB chunk and on the byte; verify returns the first differing offset or
/// SIZE_MAX.
void fillPattern(void* data, size_t bytes, uint32_t seed);
size_t verifyPattern(const void* data, size_t bytes, uint32_t seed);

}  // namespace hetopt::characterize
