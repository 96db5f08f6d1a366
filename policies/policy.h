// SPDX-License-Identifier: MIT
/**
 * @file The host-memory allocation policies hetopt chooses between, per site and size. This
 * library is linked into the preloaded shim, so it uses libc/libstdc++ only and never calls an
 * OpenCL symbol directly: the entry points come in ClPolicyFunctions, OS calls go through
 * os_memory.h, and failures come back as a PolicyStatus with a reason in a fixed buffer, so the
 * error path does not allocate either. Pools fit behind the same interface: a pool allocates one
 * large block through a policy here (pinned memory transfers at full speed at any offset inside
 * it) and hands out sub-ranges as Allocations whose `policy` is the pool's backing policy.
 */
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hetopt {

///   standard  malloc: pageable memory, the driver stages every transfer through bounce buffers
///   locked    malloc + mlock: page-locked, but a driver may not know it (NVIDIA does not)
///   opencl    a CL_MEM_ALLOC_HOST_PTR buffer, mapped: the vendor-guide way to pin
///   hybrid    malloc + mlock + a CL_MEM_USE_HOST_PTR buffer over it, mapped
///   register  memory the application already has, covered by a CL_MEM_USE_HOST_PTR buffer; no
///             mlock, no map (NVIDIA pins the pages in place for the buffer's lifetime)
enum class PolicyKind : uint8_t { Standard, Locked, OpenCL, Hybrid, Register };
inline constexpr int kPolicyCount = 5;
inline constexpr PolicyKind kAllPolicies[kPolicyCount] = {PolicyKind::Standard, PolicyKind::Locked,
                                                          PolicyKind::OpenCL, PolicyKind::Hybrid,
                                                          PolicyKind::Register};

/// "standard", "locked", "opencl", "hybrid", "register" (the names in the DB and on the CLI).
const char* policyName(PolicyKind p);
/// Inverse of policyName(); false for unknown names.
bool policyFromName(const char* name, PolicyKind* out);
/// True when the policy's allocation cost can be paid before (in parallel with) OpenCL context
/// creation: standard and locked need no context at all, hybrid's expensive part is its mlock. The
/// decision table (characterize/decide.cpp) prefers such policies for pools, which are prepared
/// while the application starts up.
bool allocationOverlapsContextCreation(PolicyKind p);

/// The OpenCL entry points the policies call. linked() is inline so that only the callers that use
/// it (tools, tests) reference the loader's symbols; the shim passes its own resolved pointers.
struct ClPolicyFunctions {
  decltype(&::clCreateBuffer) createBuffer = nullptr;
  decltype(&::clReleaseMemObject) releaseMemObject = nullptr;
  decltype(&::clEnqueueMapBuffer) enqueueMapBuffer = nullptr;
  decltype(&::clEnqueueUnmapMemObject) enqueueUnmapMemObject = nullptr;
  decltype(&::clFinish) finish = nullptr;
  static ClPolicyFunctions linked() {
    return {&::clCreateBuffer, &::clReleaseMemObject, &::clEnqueueMapBuffer,
            &::clEnqueueUnmapMemObject, &::clFinish};
  }
};

/// Where OpenCL-backed policies create their buffers. `context` may be null for standard and locked
/// (memory prepared before the application's context exists); `queue` (same context) is used for
/// map/unmap by opencl and hybrid.
struct PolicyEnv {
  ClPolicyFunctions cl;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

/// Success, or why not. The reason is formatted into a fixed buffer: no allocation on failure.
struct PolicyStatus {
  bool ok = true;
  cl_int clStatus = CL_SUCCESS;  ///< the failing OpenCL status when an OpenCL call failed
  int sysErrno = 0;              ///< the errno when an OS call failed
  char reason[240] = {};

  explicit operator bool() const { return ok; }
  static PolicyStatus failure(cl_int clStatus, int sysErrno, const char* fmt, ...)
      __attribute__((format(printf, 3, 4)));
};

/// One block of host memory served by a policy, with what release() needs to undo it.
struct Allocation {
  void* ptr = nullptr;  ///< the memory the application uses (and transfers from/to)
  size_t size = 0;      ///< bytes asked for
  PolicyKind policy = PolicyKind::Standard;
  void* base = nullptr;     ///< what free() takes; null when the memory is not ours (adopted)
  size_t lockedBytes = 0;   ///< bytes mlock'ed from `base` (whole pages); 0 when none
  cl_mem buffer = nullptr;  ///< host-pointer buffer behind `ptr` (opencl, hybrid, register)
  bool mapped = false;      ///< `ptr` is a mapping of `buffer`; release() unmaps it
};

/// A policy bound to an environment. Not thread-safe by itself; the shim serialises per policy.
class AllocationPolicy {
 public:
  explicit AllocationPolicy(const PolicyEnv& env) : m_env(env) {}
  virtual ~AllocationPolicy() = default;
  AllocationPolicy(const AllocationPolicy&) = delete;
  AllocationPolicy& operator=(const AllocationPolicy&) = delete;

  virtual PolicyKind kind() const = 0;
  /// Cheap check with no side effects: can allocate(size) work here (entry points and context
  /// present, RLIMIT_MEMLOCK budget)? A device that refuses host-pointer buffers is only found by
  /// trying: see probePolicy().
  virtual PolicyStatus availability(size_t size) const = 0;
  /// Allocates `size` bytes (0 is treated as 1). On failure nothing is left allocated.
  virtual PolicyStatus allocate(size_t size, Allocation* out) = 0;
  /// Undoes allocate(); continues through every step even when one fails, reporting the first
  /// failure. `a` is reset to empty.
  virtual PolicyStatus release(Allocation* a);

  const PolicyEnv& env() const { return m_env; }

 protected:
  PolicyEnv m_env;
};

std::unique_ptr<AllocationPolicy> makePolicy(PolicyKind kind, const PolicyEnv& env);

/// The register policy on memory the caller already owns: covers [ptr, ptr+size) with a
/// CL_MEM_USE_HOST_PTR buffer. release() then drops the buffer but leaves the memory alone.
/// A range larger than `maxBufferBytes` (the device's largest buffer; 0: not checked) is refused
/// with CL_INVALID_BUFFER_SIZE before any OpenCL call.
PolicyStatus adoptHostMemory(const PolicyEnv& env, void* ptr, size_t size, Allocation* out,
                             uint64_t maxBufferBytes = 0);

/// Hybrid in two halves, so that a pool can do the expensive one before any OpenCL context exists
/// (the shim locks the pool's pages while the program creates its context, then registers them in
/// that context). prepareHybridHost: page-aligned pages, mlock'ed; no OpenCL. finishHybrid: the
/// USE_HOST_PTR buffer over them, mapped. HybridPolicy::allocate() is the two in a row; on failure
/// of either, `a` still describes what must be released (AllocationPolicy::release()).
PolicyStatus prepareHybridHost(size_t size, Allocation* a);
PolicyStatus finishHybrid(const PolicyEnv& env, Allocation* a);

/// availability() for one page, then a real one-page allocate/write/release: finds devices that
/// refuse host-pointer buffers or mapping before anything depends on the policy.
PolicyStatus probePolicy(AllocationPolicy& policy);

}  // namespace hetopt
