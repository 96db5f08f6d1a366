// SPDX-License-Identifier: MIT
/** @file The five allocation policies: what they allocate, that release undoes it, and why not. */
#include "policies/policy.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/cl_select.h"
#include "policies/os_memory.h"

namespace hetopt {
namespace {

bool pageAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % os::pageSize() == 0; }

// Drops CAP_IPC_LOCK from the effective set (root in containers has it) and lowers RLIMIT_MEMLOCK,
// so that mlock really is limited. Only in a forked child (death-test body): it cannot be undone.
void limitLocking(rlim_t bytes) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) == 0) {
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    syscall(SYS_capset, &header, data);
  }
  struct rlimit rl;
  getrlimit(RLIMIT_MEMLOCK, &rl);
  rl.rlim_cur = bytes;
  setrlimit(RLIMIT_MEMLOCK, &rl);
}

// ---- A fake driver that has no host-pointer buffers: every clCreateBuffer with a host-pointer
// flag fails, as on devices without that support.
int s_fakeBuffers = 0;
cl_mem CL_API_CALL fakeCreateBuffer(cl_context, cl_mem_flags flags, size_t, void*, cl_int* err) {
  if (flags & (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR)) {
    *err = CL_INVALID_HOST_PTR;
    return nullptr;
  }
  ++s_fakeBuffers;
  *err = CL_SUCCESS;
  return reinterpret_cast<cl_mem>(&s_fakeBuffers);
}
cl_int CL_API_CALL fakeRelease(cl_mem) {
  --s_fakeBuffers;
  return CL_SUCCESS;
}
void* CL_API_CALL fakeMap(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint,
                          const cl_event*, cl_event*, cl_int* err) {
  *err = CL_INVALID_OPERATION;
  return nullptr;
}
cl_int CL_API_CALL fakeUnmap(cl_command_queue, cl_mem, void*, cl_uint, const cl_event*, cl_event*) {
  return CL_SUCCESS;
}
cl_int CL_API_CALL fakeFinish(cl_command_queue) { return CL_SUCCESS; }

PolicyEnv fakeEnv() {
  PolicyEnv env;
  env.cl = {fakeCreateBuffer, fakeRelease, fakeMap, fakeUnmap, fakeFinish};
  env.context = reinterpret_cast<cl_context>(&s_fakeBuffers);
  env.queue = reinterpret_cast<cl_command_queue>(&s_fakeBuffers);
  return env;
}

TEST(PolicyNames, RoundTrip) {
  for (PolicyKind p : kAllPolicies) {
    PolicyKind back = PolicyKind::Standard;
    ASSERT_TRUE(policyFromName(policyName(p), &back)) << policyName(p);
    EXPECT_EQ(back, p);
  }
  PolicyKind out;
  EXPECT_FALSE(policyFromName("pinned", &out));
  EXPECT_TRUE(allocationOverlapsContextCreation(PolicyKind::Hybrid));
  EXPECT_FALSE(allocationOverlapsContextCreation(PolicyKind::OpenCL));
}

TEST(StandardPolicy, AllocatesWritableMemoryAndReleases) {
  auto policy = makePolicy(PolicyKind::Standard, PolicyEnv{});
  EXPECT_TRUE(policy->availability(1 << 20).ok);
  Allocation a;
  ASSERT_TRUE(policy->allocate(1 << 20, &a).ok);
  ASSERT_NE(a.ptr, nullptr);
  EXPECT_EQ(a.size, 1u << 20);
  EXPECT_EQ(a.policy, PolicyKind::Standard);
  memset(a.ptr, 0x7f, a.size);
  EXPECT_TRUE(policy->release(&a).ok);
  EXPECT_EQ(a.ptr, nullptr);
  Allocation zero;
  ASSERT_TRUE(policy->allocate(0, &zero).ok);
  EXPECT_EQ(zero.size, 1u);  // 0 is served as 1, as malloc(0) may return null
  EXPECT_TRUE(policy->release(&zero).ok);
}

TEST(LockedPolicy, LocksWholePagesAndUnlocksOnRelease) {
  auto policy = makePolicy(PolicyKind::Locked, PolicyEnv{});
  PolicyStatus avail = policy->availability(256 << 10);
  if (!avail) GTEST_SKIP() << "mlock not available here: " << avail.reason;
  uint64_t before = os::lockedBytes();
  Allocation a;
  ASSERT_TRUE(policy->allocate(256 << 10, &a).ok);
  EXPECT_TRUE(pageAligned(a.ptr));
  EXPECT_EQ(a.lockedBytes, os::roundUpToPages(256 << 10));
  EXPECT_GE(os::lockedBytes(), before + (256 << 10));
  memset(a.ptr, 1, a.size);
  ASSERT_TRUE(policy->release(&a).ok);
  EXPECT_EQ(os::lockedBytes(), before);
}

TEST(LockedPolicyDeathTest, UnavailableUnderTinyMemlockLimitWithReason) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // In a child: the limit and the dropped capability must not leak into the other tests.
  EXPECT_EXIT(
      {
        limitLocking(0);
        for (PolicyKind kind : {PolicyKind::Locked, PolicyKind::Hybrid}) {
          auto policy = makePolicy(kind, fakeEnv());
          PolicyStatus st = policy->availability(64 << 10);
          if (st.ok || !strstr(st.reason, "RLIMIT_MEMLOCK")) _exit(1);
        }
        // allocate() fails cleanly too (the availability check is advisory, mlock decides).
        auto locked = makePolicy(PolicyKind::Locked, PolicyEnv{});
        Allocation a;
        PolicyStatus st = locked->allocate(64 << 10, &a);
        if (st.ok || st.sysErrno == 0 || a.ptr != nullptr) _exit(2);
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LockedPolicyDeathTest, PartialBudgetNamesSizesAndLimit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        limitLocking(1 << 20);
        auto policy = makePolicy(PolicyKind::Locked, PolicyEnv{});
        if (!policy->availability(64 << 10).ok) _exit(1);  // fits the 1 MiB budget
        PolicyStatus st = policy->availability(8 << 20);
        if (st.ok || !strstr(st.reason, "mlock of 8 MiB exceeds RLIMIT_MEMLOCK 1 MiB")) _exit(2);
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(OpenClPolicies, NeedAContext) {
  PolicyEnv env;
  env.cl = ClPolicyFunctions::linked();
  for (PolicyKind kind : {PolicyKind::OpenCL, PolicyKind::Hybrid, PolicyKind::Register}) {
    auto policy = makePolicy(kind, env);
    PolicyStatus st = policy->availability(4096);
    EXPECT_FALSE(st.ok) << policyName(kind);
    EXPECT_NE(strstr(st.reason, "context"), nullptr) << st.reason;
    Allocation a;
    EXPECT_FALSE(policy->allocate(4096, &a).ok);
    EXPECT_EQ(a.ptr, nullptr);
  }
}

TEST(OpenClPolicies, DeviceWithoutHostPointerBuffersIsReportedNotCrashed) {
  PolicyEnv env = fakeEnv();
  for (PolicyKind kind : {PolicyKind::OpenCL, PolicyKind::Register}) {
    auto policy = makePolicy(kind, env);
    EXPECT_TRUE(policy->availability(4096).ok);  // only trying tells
    PolicyStatus st = probePolicy(*policy);
    EXPECT_FALSE(st.ok) << policyName(kind);
    EXPECT_EQ(st.clStatus, CL_INVALID_HOST_PTR);
    EXPECT_NE(strstr(st.reason, "clCreateBuffer"), nullptr) << st.reason;
  }
  // Adopting memory that stays the caller's: on failure nothing is freed and nothing is returned.
  std::vector<char> mine(4096, 3);
  Allocation a;
  EXPECT_FALSE(adoptHostMemory(env, mine.data(), mine.size(), &a).ok);
  EXPECT_EQ(a.ptr, nullptr);
  // Larger than the device's largest buffer: refused, saying so, before any OpenCL call.
  const int buffersBefore = s_fakeBuffers;
  PolicyStatus tooLarge = adoptHostMemory(env, mine.data(), mine.size(), &a, 1024);
  EXPECT_FALSE(tooLarge.ok);
  EXPECT_EQ(tooLarge.clStatus, CL_INVALID_BUFFER_SIZE);
  EXPECT_NE(strstr(tooLarge.reason, "4096 bytes is more than the device's largest buffer (1024)"),
            nullptr)
      << tooLarge.reason;
  EXPECT_EQ(s_fakeBuffers, buffersBefore);
  EXPECT_EQ(a.ptr, nullptr);
  EXPECT_EQ(a.buffer, nullptr);
  EXPECT_EQ(mine[100], 3);
  EXPECT_EQ(s_fakeBuffers, 0);
}

// ---- On the real OpenCL device (PoCL in CI).
class OnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    if (!selectClDevice("", &m_dev, &error)) GTEST_SKIP() << error;
    cl_int st = CL_SUCCESS;
    m_ctx = clCreateContext(nullptr, 1, &m_dev.device, nullptr, nullptr, &st);
    ASSERT_EQ(st, CL_SUCCESS) << clErrorName(st);
    m_queue = clCreateCommandQueue(m_ctx, m_dev.device, 0, &st);
    ASSERT_EQ(st, CL_SUCCESS) << clErrorName(st);
    m_env.cl = ClPolicyFunctions::linked();
    m_env.context = m_ctx;
    m_env.queue = m_queue;
  }
  void TearDown() override {
    if (m_queue) clReleaseCommandQueue(m_queue);
    if (m_ctx) clReleaseContext(m_ctx);
  }

  // Writes `a`'s bytes to a device buffer and reads them back into fresh memory.
  void roundTrip(const Allocation& a) {
    cl_int st = CL_SUCCESS;
    cl_mem dev = clCreateBuffer(m_ctx, CL_MEM_READ_WRITE, a.size, nullptr, &st);
    ASSERT_EQ(st, CL_SUCCESS);
    ASSERT_EQ(clEnqueueWriteBuffer(m_queue, dev, CL_TRUE, 0, a.size, a.ptr, 0, nullptr, nullptr),
              CL_SUCCESS);
    std::vector<unsigned char> back(a.size, 0);
    ASSERT_EQ(
        clEnqueueReadBuffer(m_queue, dev, CL_TRUE, 0, a.size, back.data(), 0, nullptr, nullptr),
        CL_SUCCESS);
    EXPECT_EQ(memcmp(back.data(), a.ptr, a.size), 0);
    EXPECT_EQ(clReleaseMemObject(dev), CL_SUCCESS);
  }

  ClDevice m_dev;
  cl_context m_ctx = nullptr;
  cl_command_queue m_queue = nullptr;
  PolicyEnv m_env;
};

TEST_F(OnDevice, EveryPolicyServesTransferableMemory) {
  const size_t size = 3 * 65536 + 123;  // not a page multiple
  for (PolicyKind kind : kAllPolicies) {
    SCOPED_TRACE(policyName(kind));
    auto policy = makePolicy(kind, m_env);
    PolicyStatus probe = probePolicy(*policy);
    if (!probe) {
      // Only mlock may be refused here; the OpenCL ones must work on any conformant device.
      ASSERT_TRUE(kind == PolicyKind::Locked || kind == PolicyKind::Hybrid) << probe.reason;
      continue;
    }
    Allocation a;
    ASSERT_TRUE(policy->allocate(size, &a).ok);
    ASSERT_NE(a.ptr, nullptr);
    EXPECT_EQ(a.policy, kind);
    EXPECT_EQ(a.buffer != nullptr, kind == PolicyKind::OpenCL || kind == PolicyKind::Hybrid ||
                                       kind == PolicyKind::Register);
    EXPECT_EQ(a.mapped, kind == PolicyKind::OpenCL || kind == PolicyKind::Hybrid);
    EXPECT_EQ(a.lockedBytes != 0, kind == PolicyKind::Locked || kind == PolicyKind::Hybrid);
    auto* bytes = static_cast<unsigned char*>(a.ptr);
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    roundTrip(a);
    EXPECT_TRUE(policy->release(&a).ok);
  }
}

// The pool's way (shim/core/optimize_interceptor.cpp): the host half before any context exists,
// the OpenCL half once it does; the data written in between is what the buffer then holds.
TEST_F(OnDevice, HybridInTwoHalvesKeepsWhatWasWrittenBetween) {
  const size_t size = 5 * 65536 + 77;
  Allocation a;
  PolicyStatus st = prepareHybridHost(size, &a);
  if (!st) {  // only the mlock budget may refuse this half (it makes no OpenCL call)
    ASSERT_NE(st.sysErrno, 0) << st.reason;
    return;
  }
  EXPECT_EQ(a.policy, PolicyKind::Hybrid);
  EXPECT_GE(a.lockedBytes, size);
  EXPECT_EQ(a.buffer, nullptr);
  EXPECT_FALSE(a.mapped);
  auto* bytes = static_cast<unsigned char*>(a.ptr);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 13 + 5);
  ASSERT_TRUE(finishHybrid(m_env, &a).ok);
  ASSERT_NE(a.buffer, nullptr);
  EXPECT_TRUE(a.mapped);
  bytes = static_cast<unsigned char*>(a.ptr);
  for (size_t i = 0; i < size; i += 4099)
    ASSERT_EQ(bytes[i], static_cast<unsigned char>(i * 13 + 5));
  roundTrip(a);
  auto policy = makePolicy(PolicyKind::Hybrid, m_env);
  EXPECT_TRUE(policy->release(&a).ok);
  EXPECT_EQ(a.ptr, nullptr);

  // Without a context the OpenCL half fails with a reason, and release() still frees the pages.
  ASSERT_TRUE(prepareHybridHost(size, &a).ok);
  PolicyEnv none;
  none.cl = m_env.cl;
  PolicyStatus fail = finishHybrid(none, &a);
  EXPECT_FALSE(fail.ok);
  EXPECT_NE(std::string(fail.reason).find("context"), std::string::npos) << fail.reason;
  EXPECT_TRUE(policy->release(&a).ok);
}

TEST_F(OnDevice, AdoptLeavesTheMemoryToItsOwner) {
  std::vector<unsigned char> mine(1 << 20);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<unsigned char>(i ^ (i >> 8));
  Allocation a;
  ASSERT_TRUE(adoptHostMemory(m_env, mine.data(), mine.size(), &a).ok);
  EXPECT_EQ(a.ptr, mine.data());
  EXPECT_EQ(a.base, nullptr);
  ASSERT_NE(a.buffer, nullptr);
  roundTrip(a);
  auto policy = makePolicy(PolicyKind::Register, m_env);
  EXPECT_TRUE(policy->release(&a).ok);
  mine[5] = 42;  // still ours, still writable
  EXPECT_EQ(mine[5], 42);
}

TEST_F(OnDevice, ReleaseRejectsNothingAndEmptiesTheAllocation) {
  auto policy = makePolicy(PolicyKind::OpenCL, m_env);
  Allocation a;
  ASSERT_TRUE(policy->allocate(4096, &a).ok);
  EXPECT_TRUE(policy->release(&a).ok);
  EXPECT_EQ(a.buffer, nullptr);
  EXPECT_FALSE(a.mapped);
  // Releasing an empty allocation is a no-op, not a double free.
  EXPECT_TRUE(policy->release(&a).ok);
}

}  // namespace
}  // namespace hetopt
