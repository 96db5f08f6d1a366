// SPDX-License-Identifier: MIT
/**
 * @file The OpenCL-free half of the test-app harness: options, data patterns, checksums, checks
 * and timing. It references no OpenCL entry point (only CL types and hetopt::clErrorName), so an
 * app that dlopen()s libOpenCL can use it without linking the loader. The contract every app keeps
 * is at the top of app_common.h.
 */
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/cl_select.h"

namespace hetopt::apps {

[[noreturn]] void failCl(cl_int status, const char* expr, const char* file, int line);
[[noreturn]] void failCheck(const char* what, const char* file, int line);

#define APP_CL(expr)                                                     \
  do {                                                                   \
    cl_int app_cl_status_ = (expr);                                      \
    if (app_cl_status_ != CL_SUCCESS)                                    \
      ::hetopt::apps::failCl(app_cl_status_, #expr, __FILE__, __LINE__); \
  } while (0)

/// Self-check of a computed result; exits 1 (wrong result) when false.
#define APP_CHECK(cond)                                                \
  do {                                                                 \
    if (!(cond)) ::hetopt::apps::failCheck(#cond, __FILE__, __LINE__); \
  } while (0)

struct Options {
  size_t sizeBytes = 1 << 20;  ///< working-set size; apps document how they use it
  int iters = 10;
  bool pinned = false;  ///< hand-pinned variant
  std::vector<std::string> rest;
};

/// Parses --size/--iters/--pinned (plus --help). Unknown args go to `rest`.
Options parseOptions(int argc, char** argv, size_t defaultSize, int defaultIters);

/// Parses "64M", "4K", "1G", "123" (bytes). Returns 0 on garbage.
size_t parseSize(const std::string& s);

/// Deterministic, non-trivial data: a small LCG so runs are reproducible and never all-zero.
void fillPattern(float* data, size_t n, uint32_t seed);
void fillPattern(int32_t* data, size_t n, uint32_t seed);

/// Order-sensitive checksum printed in "result:" lines (identical across modes).
uint64_t checksum(const void* data, size_t bytes);

/// Relative-error comparison; prints the first mismatch to stderr.
bool nearlyEqual(const float* got, const float* want, size_t n, float relTol = 1e-5f);

/// Prints the contract's first stdout line, "device: <platform> / <device>".
void printDevice(const ClDevice& device);

/// Prints "result: <label> n=<count> checksum=<hex>" for `bytes` of device output.
void printResult(const char* label, size_t count, const void* data, size_t bytes);

/// `n` rounded up to a multiple of `multiple`: a 1-D global size for work-group size `multiple`.
inline size_t roundUp(size_t n, size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

/// Monotonic milliseconds; apps print "elapsed_ms=" with it on stderr.
double nowMs();
/// Wall-clock (Unix epoch) milliseconds: comparable with a `date +%s%N` taken outside the process.
double unixMs();
void reportElapsed(double startMs);
/// For apps whose timed part ended before verification started (e.g. on worker threads).
void reportElapsed(double startMs, double endMs);

}  // namespace hetopt::apps
