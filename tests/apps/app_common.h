// SPDX-License-Identifier: MIT
/**
 * @file Shared harness of hetopt's own OpenCL test applications.
 *
 * Contract every app keeps (the integration tests and later phases rely on it):
 *  - stdout is deterministic: the "device:" line and "result:" lines only, identical natively, under
 *    the pass-through shim, under tracing and under optimization. Timings go to stderr as
 *    "elapsed_ms=<float>" (used by the benchmarks).
 *  - The app checks its own numeric results against a host reference on non-trivial data and exits
 *    1 on a mismatch (2 on OpenCL/set-up errors).
 *  - --size BYTES (K/M/G suffixes) scales the working set, --iters N the iteration count,
 *    --pinned selects the hand-pinned variant (vendor-guide pinning: a CL_MEM_ALLOC_HOST_PTR
 *    buffer, mapped, used as the host side of transfers): the performance oracle.
 *  - Ground truth for allocation analysis: every host allocation that feeds a host<->device
 *    transfer carries the comment `// hetopt:transfer` on its line; host-only allocations of at
 *    least 4 KiB carry `// hetopt:host-only`. Tests compare the analyzer's symbolized candidate
 *    sites with these markers.
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

#define APP_CL(expr)                                                         \
  do {                                                                       \
    cl_int app_cl_status_ = (expr);                                          \
    if (app_cl_status_ != CL_SUCCESS)                                        \
      ::hetopt::apps::failCl(app_cl_status_, #expr, __FILE__, __LINE__);     \
  } while (0)

/// Self-check of a computed result; exits 1 (wrong result) when false.
#define APP_CHECK(cond)                                                    \
  do {                                                                     \
    if (!(cond)) ::hetopt::apps::failCheck(#cond, __FILE__, __LINE__);     \
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

/// A device picked by hetopt's one rule (HETOPT_DEVICE; first GPU else first device), a context
/// and in-order queues on it. Prints "device: <platform> / <device>" on stdout.
class ClEnv {
 public:
  explicit ClEnv(int numQueues = 1, cl_command_queue_properties props = 0);
  ~ClEnv();
  ClEnv(const ClEnv&) = delete;
  ClEnv& operator=(const ClEnv&) = delete;

  cl_context context() const { return m_context; }
  cl_device_id device() const { return m_device.device; }
  cl_command_queue queue(int i = 0) const { return m_queues.at(i); }
  const ClDevice& info() const { return m_device; }

  /// Builds `source` for the device; on failure prints the build log and exits 2.
  cl_program build(const char* source, const char* options = "") const;
  cl_kernel kernel(cl_program program, const char* name) const;

 private:
  ClDevice m_device;
  cl_context m_context = nullptr;
  std::vector<cl_command_queue> m_queues;
};

/// Hand pinning the way vendor guides describe it: a CL_MEM_ALLOC_HOST_PTR buffer mapped once;
/// the mapped pointer is the host memory used for transfers. Unmapped and released in the dtor.
class PinnedHostMemory {
 public:
  PinnedHostMemory(const ClEnv& env, size_t bytes);
  ~PinnedHostMemory();
  PinnedHostMemory(const PinnedHostMemory&) = delete;
  PinnedHostMemory& operator=(const PinnedHostMemory&) = delete;
  void* data() const { return m_ptr; }
  template <typename T>
  T* as() const { return static_cast<T*>(m_ptr); }
  size_t size() const { return m_bytes; }

 private:
  const ClEnv& m_env;
  cl_mem m_buffer = nullptr;
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
};

/// Deterministic, non-trivial data: a small LCG so runs are reproducible and never all-zero.
void fillPattern(float* data, size_t n, uint32_t seed);
void fillPattern(int32_t* data, size_t n, uint32_t seed);

/// Order-sensitive checksum printed in "result:" lines (identical across modes).
uint64_t checksum(const void* data, size_t bytes);

/// Relative-error comparison; prints the first mismatch to stderr.
bool nearlyEqual(const float* got, const float* want, size_t n, float relTol = 1e-5f);

/// Monotonic milliseconds; apps print "elapsed_ms=" with it on stderr.
double nowMs();
void reportElapsed(double startMs);

}  // namespace hetopt::apps
