// SPDX-License-Identifier: MIT
/** @file The five allocation policies; see policy.h.
 * Shared steps (pages, mlock, host buffers), one class per policy, the hybrid halves, probing. */
#include "policies/policy.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/units.h"
#include "policies/os_memory.h"

namespace hetopt {
namespace {

// A byte count or limit into a caller buffer (no allocation).
const char* bytesText(uint64_t bytes, char* buf, size_t len) {
  if (bytes != UINT64_MAX) return formatBytes(buf, len, bytes);
  snprintf(buf, len, "unlimited");
  return buf;
}

PolicyStatus clFailure(cl_int st, const char* what) {
  return PolicyStatus::failure(st, 0, "%s failed (OpenCL status %d)", what, static_cast<int>(st));
}

// Whether `bytes` more can be mlock'ed under RLIMIT_MEMLOCK, with the reason when not.
PolicyStatus lockBudget(size_t size) {
  uint64_t limit = os::memlockLimit();
  if (limit == UINT64_MAX || os::canLockBeyondLimit()) return {};
  uint64_t need = os::roundUpToPages(size);
  uint64_t locked = os::lockedBytes();
  char a[32], b[32], c[32];
  if (limit == 0)
    return PolicyStatus::failure(CL_SUCCESS, EPERM,
                                 "mlock not permitted: RLIMIT_MEMLOCK is 0 and no CAP_IPC_LOCK "
                                 "(raise `ulimit -l`)");
  if (locked > limit || need > limit - locked)
    return PolicyStatus::failure(CL_SUCCESS, ENOMEM,
                                 "mlock of %s exceeds RLIMIT_MEMLOCK %s (%s already locked; raise "
                                 "`ulimit -l`)",
                                 bytesText(need, a, sizeof a), bytesText(limit, b, sizeof b),
                                 bytesText(locked, c, sizeof c));
  return {};
}

PolicyStatus mlockFailure(int err, size_t bytes) {
  char a[32], b[32];
  return PolicyStatus::failure(CL_SUCCESS, err, "mlock of %s refused: %s (RLIMIT_MEMLOCK %s)",
                               bytesText(bytes, a, sizeof a), strerror(err),
                               bytesText(os::memlockLimit(), b, sizeof b));
}

PolicyStatus clAvailability(const PolicyEnv& env, bool needsQueue) {
  const ClPolicyFunctions& cl = env.cl;
  if (!cl.createBuffer || !cl.releaseMemObject || !cl.enqueueMapBuffer ||
      !cl.enqueueUnmapMemObject || !cl.finish)
    return PolicyStatus::failure(CL_SUCCESS, 0, "OpenCL entry points not available");
  if (!env.context) return PolicyStatus::failure(CL_SUCCESS, 0, "needs an OpenCL context");
  if (needsQueue && !env.queue)
    return PolicyStatus::failure(CL_SUCCESS, 0, "needs an OpenCL command queue to map");
  return {};
}

// Page-aligned, page-rounded memory: mlock works on whole pages, and a block that shared a page
// with a neighbour would unlock the neighbour's page when released.
PolicyStatus allocatePages(size_t size, Allocation* a) {
  size_t bytes = os::roundUpToPages(size);
  void* p = nullptr;
  int err = posix_memalign(&p, os::pageSize(), bytes);
  if (err != 0) {
    char b[32];
    return PolicyStatus::failure(CL_SUCCESS, err, "posix_memalign of %s failed: %s",
                                 bytesText(bytes, b, sizeof b), strerror(err));
  }
  a->base = p;
  a->ptr = p;
  return {};
}

PolicyStatus lockPages(Allocation* a) {
  size_t bytes = os::roundUpToPages(a->size);
  int err = os::lockMemory(a->base, bytes);
  if (err != 0) return mlockFailure(err, bytes);
  a->lockedBytes = bytes;
  return {};
}

// Creates a host-pointer buffer over a->ptr (USE_HOST_PTR) or a fresh one (ALLOC_HOST_PTR) and,
// when asked, maps it; a->ptr becomes the mapped pointer.
PolicyStatus createHostBuffer(const PolicyEnv& env, cl_mem_flags flags, bool map, Allocation* a) {
  cl_int st = CL_SUCCESS;
  void* hostPtr = (flags & CL_MEM_USE_HOST_PTR) ? a->ptr : nullptr;
  cl_mem buffer =
      env.cl.createBuffer(env.context, CL_MEM_READ_WRITE | flags, a->size, hostPtr, &st);
  if (st != CL_SUCCESS || !buffer)
    return clFailure(st != CL_SUCCESS ? st : CL_OUT_OF_RESOURCES,
                     (flags & CL_MEM_USE_HOST_PTR) ? "clCreateBuffer(CL_MEM_USE_HOST_PTR)"
                                                   : "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
  a->buffer = buffer;
  if (!map) return {};
  void* mapped = env.cl.enqueueMapBuffer(env.queue, buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                         a->size, 0, nullptr, nullptr, &st);
  if (st != CL_SUCCESS || !mapped)
    return clFailure(st != CL_SUCCESS ? st : CL_MAP_FAILURE, "clEnqueueMapBuffer");
  a->ptr = mapped;
  a->mapped = true;
  return {};
}

class StandardPolicy final : public AllocationPolicy {
 public:
  using AllocationPolicy::AllocationPolicy;
  PolicyKind kind() const override { return PolicyKind::Standard; }
  PolicyStatus availability(size_t) const override { return {}; }
  PolicyStatus allocate(size_t size, Allocation* out) override {
    *out = Allocation{};
    out->policy = kind();
    out->size = size ? size : 1;
    void* p = malloc(out->size);
    if (!p) {
      char b[32];
      return PolicyStatus::failure(CL_SUCCESS, ENOMEM, "malloc of %s failed",
                                   bytesText(out->size, b, sizeof b));
    }
    out->ptr = out->base = p;
    return {};
  }
};

class LockedPolicy final : public AllocationPolicy {
 public:
  using AllocationPolicy::AllocationPolicy;
  PolicyKind kind() const override { return PolicyKind::Locked; }
  PolicyStatus availability(size_t size) const override { return lockBudget(size ? size : 1); }
  PolicyStatus allocate(size_t size, Allocation* out) override {
    *out = Allocation{};
    out->policy = kind();
    out->size = size ? size : 1;
    PolicyStatus st = allocatePages(out->size, out);
    if (st) st = lockPages(out);
    if (!st) release(out);
    return st;
  }
};

class OpenClPolicy final : public AllocationPolicy {
 public:
  using AllocationPolicy::AllocationPolicy;
  PolicyKind kind() const override { return PolicyKind::OpenCL; }
  PolicyStatus availability(size_t) const override { return clAvailability(m_env, true); }
  PolicyStatus allocate(size_t size, Allocation* out) override {
    *out = Allocation{};
    out->policy = kind();
    out->size = size ? size : 1;
    PolicyStatus st = clAvailability(m_env, true);
    if (st) st = createHostBuffer(m_env, CL_MEM_ALLOC_HOST_PTR, true, out);
    if (!st) release(out);
    return st;
  }
};

class HybridPolicy final : public AllocationPolicy {
 public:
  using AllocationPolicy::AllocationPolicy;
  PolicyKind kind() const override { return PolicyKind::Hybrid; }
  PolicyStatus availability(size_t size) const override {
    PolicyStatus st = clAvailability(m_env, true);
    return st ? lockBudget(size ? size : 1) : st;
  }
  PolicyStatus allocate(size_t size, Allocation* out) override {
    *out = Allocation{};
    PolicyStatus st = clAvailability(m_env, true);
    if (st) st = prepareHybridHost(size, out);
    if (st) st = finishHybrid(m_env, out);
    if (!st) release(out);
    return st;
  }
};

class RegisterPolicy final : public AllocationPolicy {
 public:
  using AllocationPolicy::AllocationPolicy;
  PolicyKind kind() const override { return PolicyKind::Register; }
  PolicyStatus availability(size_t) const override { return clAvailability(m_env, false); }
  // Plain malloc (an application's memory is not page-aligned either), then registration.
  PolicyStatus allocate(size_t size, Allocation* out) override {
    *out = Allocation{};
    size = size ? size : 1;
    void* p = malloc(size);
    if (!p) {
      char b[32];
      return PolicyStatus::failure(CL_SUCCESS, ENOMEM, "malloc of %s failed",
                                   bytesText(size, b, sizeof b));
    }
    PolicyStatus st = adoptHostMemory(m_env, p, size, out);
    if (!st) {
      free(p);
      return st;
    }
    out->base = p;
    return st;
  }
};

}  // namespace

PolicyStatus prepareHybridHost(size_t size, Allocation* a) {
  *a = Allocation{};
  a->policy = PolicyKind::Hybrid;
  a->size = size ? size : 1;
  PolicyStatus st = allocatePages(a->size, a);
  return st ? lockPages(a) : st;
}

PolicyStatus finishHybrid(const PolicyEnv& env, Allocation* a) {
  PolicyStatus st = clAvailability(env, true);
  return st ? createHostBuffer(env, CL_MEM_USE_HOST_PTR, true, a) : st;
}

PolicyStatus PolicyStatus::failure(cl_int clStatus, int sysErrno, const char* fmt, ...) {
  PolicyStatus s;
  s.ok = false;
  s.clStatus = clStatus;
  s.sysErrno = sysErrno;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s.reason, sizeof s.reason, fmt, ap);
  va_end(ap);
  return s;
}

const char* policyName(PolicyKind p) {
  switch (p) {
    case PolicyKind::Standard:
      return "standard";
    case PolicyKind::Locked:
      return "locked";
    case PolicyKind::OpenCL:
      return "opencl";
    case PolicyKind::Hybrid:
      return "hybrid";
    case PolicyKind::Register:
      return "register";
  }
  return "unknown";
}

bool policyFromName(const char* name, PolicyKind* out) {
  for (PolicyKind p : kAllPolicies) {
    if (strcmp(name, policyName(p)) == 0) {
      *out = p;
      return true;
    }
  }
  return false;
}

bool allocationOverlapsContextCreation(PolicyKind p) {
  return p == PolicyKind::Standard || p == PolicyKind::Locked || p == PolicyKind::Hybrid;
}

PolicyStatus AllocationPolicy::release(Allocation* a) {
  PolicyStatus first;
  auto keep = [&first](PolicyStatus st) {
    if (first.ok && !st.ok) first = st;
  };
  if (a->mapped) {
    cl_int st = m_env.cl.enqueueUnmapMemObject(m_env.queue, a->buffer, a->ptr, 0, nullptr, nullptr);
    if (st != CL_SUCCESS) keep(clFailure(st, "clEnqueueUnmapMemObject"));
    // The unmap must have happened before the buffer (and, for hybrid, the pages) go away.
    st = m_env.cl.finish(m_env.queue);
    if (st != CL_SUCCESS) keep(clFailure(st, "clFinish after unmap"));
  }
  if (a->buffer) {
    cl_int st = m_env.cl.releaseMemObject(a->buffer);
    if (st != CL_SUCCESS) keep(clFailure(st, "clReleaseMemObject"));
  }
  if (a->lockedBytes) {
    int err = os::unlockMemory(a->base, a->lockedBytes);
    if (err != 0) keep(PolicyStatus::failure(CL_SUCCESS, err, "munlock failed: %s", strerror(err)));
  }
  if (a->base) free(a->base);
  *a = Allocation{};
  return first;
}

std::unique_ptr<AllocationPolicy> makePolicy(PolicyKind kind, const PolicyEnv& env) {
  switch (kind) {
    case PolicyKind::Standard:
      return std::make_unique<StandardPolicy>(env);
    case PolicyKind::Locked:
      return std::make_unique<LockedPolicy>(env);
    case PolicyKind::OpenCL:
      return std::make_unique<OpenClPolicy>(env);
    case PolicyKind::Hybrid:
      return std::make_unique<HybridPolicy>(env);
    case PolicyKind::Register:
      return std::make_unique<RegisterPolicy>(env);
  }
  return nullptr;
}

PolicyStatus adoptHostMemory(const PolicyEnv& env, void* ptr, size_t size, Allocation* out,
                             uint64_t maxBufferBytes) {
  *out = Allocation{};
  if (maxBufferBytes && size > maxBufferBytes)
    return PolicyStatus::failure(CL_INVALID_BUFFER_SIZE, 0,
                                 "%zu bytes is more than the device's largest buffer (%llu)", size,
                                 static_cast<unsigned long long>(maxBufferBytes));
  out->policy = PolicyKind::Register;
  out->size = size ? size : 1;
  out->ptr = ptr;
  PolicyStatus st = clAvailability(env, false);
  if (st) st = createHostBuffer(env, CL_MEM_USE_HOST_PTR, false, out);
  if (!st) *out = Allocation{};
  return st;
}

PolicyStatus probePolicy(AllocationPolicy& policy) {
  size_t page = os::pageSize();
  PolicyStatus st = policy.availability(page);
  if (!st) return st;
  Allocation a;
  st = policy.allocate(page, &a);
  if (!st) return st;
  // Touch every byte: a mapping that is not really writable must fail here, not in a benchmark.
  memset(a.ptr, 0x5a, a.size);
  return policy.release(&a);
}

}  // namespace hetopt
