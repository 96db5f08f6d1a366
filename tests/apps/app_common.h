// SPDX-License-Identifier: MIT
/**
 * @file Shared harness of hetopt's own OpenCL test applications.
 *
 * Contract every app keeps (the integration tests and later phases rely on it):
 *  - stdout is deterministic: the "device:" line and "result:" lines only, identical natively,
 * under the pass-through shim, under tracing and under optimization. Timings go to stderr as
 *    "elapsed_ms=<float>" (used by the benchmarks); with APP_PHASES=1 ClEnv adds
 *    "setup_unix_ms=", "setup_ms=" and, at exit, "exit_unix_ms=" (scripts/bench/measure_lib.sh).
 *  - The app checks its own numeric results against a host reference on non-trivial data and exits
 *    1 on a mismatch (2 on OpenCL/set-up errors).
 *  - --size BYTES (K/M/G suffixes) scales the working set, --iters N the iteration count,
 *    --pinned selects the hand-pinned variant (vendor-guide pinning: a CL_MEM_ALLOC_HOST_PTR
 *    buffer, mapped, used as the host side of transfers): the performance oracle.
 *  - Ground truth for allocation analysis: every host allocation that feeds a host<->device
 *    transfer carries the comment `// hetopt:transfer` on its line; host-only allocations of at
 *    least 4 KiB carry `// hetopt:host-only`. Tests compare the analyzer's symbolized candidate
 *    sites with these markers.
 *
 * This half needs the OpenCL loader linked (ClEnv, PinnedHostMemory); app_util.h is the half that
 * does not, for apps that dlopen() it.
 */
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cl_select.h"
#include "tests/apps/app_util.h"

namespace hetopt::apps {

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
  /// clCreateBuffer with the status checked.
  cl_mem buffer(cl_mem_flags flags, size_t bytes, void* hostPtr = nullptr) const;

 private:
  ClDevice m_device;
  cl_context m_context = nullptr;
  std::vector<cl_command_queue> m_queues;
};

/// Hand pinning the way vendor guides describe it: a CL_MEM_ALLOC_HOST_PTR buffer mapped once;
/// the mapped pointer is the host memory used for transfers. Unmapped and released in the dtor.
class PinnedHostMemory {
 public:
  /// Maps through queue `queueIndex` (threads that own a queue pin through it).
  PinnedHostMemory(const ClEnv& env, size_t bytes, int queueIndex = 0);
  ~PinnedHostMemory();
  PinnedHostMemory(const PinnedHostMemory&) = delete;
  PinnedHostMemory& operator=(const PinnedHostMemory&) = delete;
  void* data() const { return m_ptr; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(m_ptr);
  }
  size_t size() const { return m_bytes; }

 private:
  cl_command_queue m_queue = nullptr;
  cl_mem m_buffer = nullptr;
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
};

/// The --pinned variant's host memory for one transfer allocation: a PinnedHostMemory when
/// `pinned`, else null and the app uses the allocation it marks `// hetopt:transfer`. The
/// allocation itself stays in the app so its marker sits on the line that allocates.
std::unique_ptr<PinnedHostMemory> pinnedIf(bool pinned, const ClEnv& env, size_t bytes,
                                           int queueIndex = 0);

/// clSetKernelArg for every argument in order, each status checked. Pass cl_mem handles and
/// scalars by value: `setKernelArgs(k, buf, 0.5f, cl_uint(n))`.
template <typename... Args>
void setKernelArgs(cl_kernel kernel, const Args&... args) {
  cl_uint index = 0;
  auto set = [&](const auto& arg) { APP_CL(clSetKernelArg(kernel, index++, sizeof(arg), &arg)); };
  (set(args), ...);
}

/// Enqueues `kernel` over `n` work-items (global size rounded up to 64; kernels bound-check).
void enqueue1D(cl_command_queue queue, cl_kernel kernel, size_t n, cl_uint numWait = 0,
               const cl_event* waitList = nullptr, cl_event* done = nullptr);

}  // namespace hetopt::apps
