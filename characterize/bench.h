// SPDX-License-Identifier: MIT
/**
 * @file The micro-benchmarks of `hetopt characterize`: allocation (and free) time per policy and
 * size, and host<->device transfer time from each policy's memory with 1..4 concurrent transfers
 * on separate queues, as bench_plan.h plans them under a memory budget. At each size the policies
 * are measured interleaved, repetition by repetition, so that noise that comes and goes over time
 * hits all of them alike; every transfer's data is verified, so one that silently does nothing
 * fails the run.
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "characterize/bench_plan.h"
#include "characterize/model.h"
#include "characterize/progress.h"
#include "common/cl_select.h"

namespace hetopt::characterize {

/// Measures `device` (every policy, every size, as makeBenchPlan plans it for this host and
/// device) into `run` (info, policies, samples; no fits). False with a one-line *error when OpenCL
/// fails or a transfer returns wrong data. Host data is a non-zero pattern that differs per block
/// and per 64 KiB chunk; after each size's D2H runs every block is compared with what was
/// written. Every OpenCL status is checked. Memory for a size (host blocks and device buffers) is
/// allocated fresh, the host blocks through the policy as an application would, and released
/// before the next size or group. Progress gets the plan's memory line and notes, and after
/// every step the time left (PhaseEstimate).
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
