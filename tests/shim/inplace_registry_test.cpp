// SPDX-License-Identifier: MIT
/**
 * @file In-place registration (shim/core/inplace_registry.h) against a fake OpenCL that checks, on
 * every buffer release, that the buffer's host memory is still mapped: a registration released
 * after the program's munmap would be caught here (on a GPU it would leave the driver holding
 * pages the program gave back).
 */
#include "shim/core/inplace_registry.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "shim/core/callsite.h"
#include "tests/shim/fake_register_driver.h"

namespace hetopt::shim {
namespace {

// ---- a fake OpenCL: USE_HOST_PTR buffers as (pointer, size) records --------------------------
struct FakeBuffer {
  void* host;
  size_t size;
};
std::atomic<int> g_created{0}, g_released{0}, g_releasedUnmapped{0};
std::atomic<bool> g_refuse{false};

bool stillMapped(void* p, size_t size) {
  // msync fails with ENOMEM on a range that is not (entirely) mapped.
  return msync(p, size, MS_ASYNC) == 0;
}

cl_mem CL_API_CALL fakeCreateBuffer(cl_context, cl_mem_flags flags, size_t size, void* host,
                                    cl_int* err) {
  if (g_refuse.load() || !(flags & CL_MEM_USE_HOST_PTR) || !host) {
    *err = CL_INVALID_BUFFER_SIZE;
    return nullptr;
  }
  *err = CL_SUCCESS;
  g_created.fetch_add(1);
  return reinterpret_cast<cl_mem>(new FakeBuffer{host, size});
}
cl_int CL_API_CALL fakeRelease(cl_mem m) {
  auto* b = reinterpret_cast<FakeBuffer*>(m);
  if (!stillMapped(b->host, b->size)) g_releasedUnmapped.fetch_add(1);
  g_released.fetch_add(1);
  delete b;
  return CL_SUCCESS;
}
PolicyEnv fakeEnv() { return testing::fakeRegisterEnv(&fakeCreateBuffer, &fakeRelease); }

class Registry : public ::testing::Test {
 protected:
  void SetUp() override {
    g_created = g_released = g_releasedUnmapped = 0;
    g_refuse = false;
  }
  static Plan mappingPlan(uint64_t minBytes, uint64_t maxBytes) {
    Plan p;
    p.mmapMinBytes = minBytes;
    p.mmapMaxBytes = maxBytes;
    return p;
  }
  static void* map(size_t bytes, void* hint = nullptr, int extra = 0) {
    void* p = mmap(hint, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    return p;
  }
  // What the shim's munmap entry point does: the registry first, then the kernel.
  static void unmap(InplaceRegistry& r, void* p, size_t bytes) {
    r.unmapping(p, bytes, false);
    ASSERT_EQ(munmap(p, bytes), 0);
  }
  static constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS;
};

alignas(4096) char g_static[3 * 4096 + 100];

TEST_F(Registry, StaticRangeOfThisProgramIsRegisteredWhenTheContextExists) {
  ModuleMap::instance().refresh();
  const Module* m = ModuleMap::instance().find(reinterpret_cast<uintptr_t>(g_static));
  ASSERT_NE(m, nullptr);
  Plan plan;
  // The middle of the array: registered as whole pages around it.
  plan.staticRanges.push_back(
      {m->identity, reinterpret_cast<uintptr_t>(g_static + 5000) - m->bias, 100});
  // Sharing its page: merged into the same registration.
  plan.staticRanges.push_back(
      {m->identity, reinterpret_cast<uintptr_t>(g_static + 6000) - m->bias, 100});
  plan.staticRanges.push_back({m->identity ^ 1, 0, 100});           // another module: not here
  plan.staticRanges.push_back({m->identity, UINT64_MAX / 2, 100});  // outside the image
  InplaceRegistry r(plan);
  EXPECT_FALSE(r.transfer(g_static + 5000, 10, true));  // no context yet
  r.contextReady(fakeEnv());
  EXPECT_EQ(g_created.load(), 1);
  EXPECT_TRUE(r.transfer(g_static + 5000, 10, true));
  EXPECT_TRUE(r.transfer(g_static + 4096, 10, false));  // same page
  EXPECT_FALSE(r.transfer(g_static, 10, true));         // the page before: not named by the plan
  std::string s = r.stats();
  EXPECT_NE(s.find("1 static ranges"), std::string::npos) << s;
  EXPECT_NE(s.find("2 static ranges not found"), std::string::npos) << s;
  EXPECT_NE(s.find("1 h2d"), std::string::npos) << s;
  EXPECT_NE(s.find("1 d2h"), std::string::npos) << s;
}

TEST_F(Registry, MappingIsRegisteredOnItsFirstTransferAndReleasedBeforeItIsUnmapped) {
  InplaceRegistry r(mappingPlan(1 << 20, 8 << 20));
  r.contextReady(fakeEnv());
  const size_t bytes = 2 << 20;
  void* a = map(bytes);
  r.mapped(a, bytes, kFlags);
  EXPECT_EQ(g_created.load(), 0);  // not before it crosses
  EXPECT_TRUE(r.transfer(static_cast<char*>(a) + 12345, 100, true));
  EXPECT_TRUE(r.transfer(a, bytes, false));
  EXPECT_EQ(g_created.load(), 1);
  unmap(r, a, bytes);
  EXPECT_EQ(g_released.load(), 1);
  EXPECT_EQ(g_releasedUnmapped.load(), 0);
  // A new mapping at the same address is new memory: registered anew on its first transfer.
  void* b = map(bytes, a);
  r.mapped(b, bytes, kFlags);
  memset(b, 7, bytes);
  EXPECT_TRUE(r.transfer(b, bytes, true));
  EXPECT_EQ(g_created.load(), 2);
  // Discarded contents (madvise): unpinned, still tracked, registered again when it crosses.
  EXPECT_TRUE(r.unmapping(static_cast<char*>(b) + 4096, 4096, true));
  EXPECT_EQ(g_released.load(), 2);
  ASSERT_EQ(madvise(b, bytes, MADV_DONTNEED), 0);
  EXPECT_TRUE(r.transfer(b, 1, true));
  EXPECT_EQ(g_created.load(), 3);
  // A partial munmap releases the whole registration and forgets the mapping.
  unmap(r, static_cast<char*>(b) + bytes / 2, bytes / 2);
  EXPECT_EQ(g_released.load(), 3);
  EXPECT_FALSE(r.transfer(b, 1, true));
  ASSERT_EQ(munmap(b, bytes / 2), 0);
  EXPECT_EQ(g_releasedUnmapped.load(), 0);
  EXPECT_EQ(g_created.load(), g_released.load());
}

TEST_F(Registry, OnlyAnonymousPrivateMappingsOfThePlansSizesAreTouched) {
  InplaceRegistry r(mappingPlan(1 << 20, 4 << 20));
  r.contextReady(fakeEnv());
  void* small = map(512 << 10);
  void* big = map(8 << 20);
  void* ok = map(2 << 20);
  r.mapped(small, 512 << 10, kFlags);
  r.mapped(big, 8 << 20, kFlags);
  r.mapped(ok, 2 << 20, MAP_SHARED | MAP_ANONYMOUS);
  EXPECT_FALSE(r.transfer(small, 1, true));
  EXPECT_FALSE(r.transfer(big, 1, true));
  EXPECT_FALSE(r.transfer(ok, 1, true));
  EXPECT_EQ(g_created.load(), 0);
  unmap(r, small, 512 << 10);
  unmap(r, big, 8 << 20);
  unmap(r, ok, 2 << 20);
  EXPECT_EQ(g_released.load(), 0);
}

TEST_F(Registry, MappingsMadeBeforeTheContextAreRegisteredWhenItComes) {
  InplaceRegistry r(mappingPlan(1 << 20, 4 << 20));
  void* a = map(1 << 20);
  r.mapped(a, 1 << 20, kFlags);
  EXPECT_FALSE(r.transfer(a, 1, true));  // no context yet: pageable, not an error
  r.contextReady(fakeEnv());
  EXPECT_EQ(g_created.load(), 1);
  EXPECT_TRUE(r.transfer(a, 1, true));
  unmap(r, a, 1 << 20);
  EXPECT_EQ(g_released.load(), 1);
  EXPECT_EQ(g_releasedUnmapped.load(), 0);
}

TEST_F(Registry, RefusedRegistrationIsCountedAndNotRetried) {
  InplaceRegistry r(mappingPlan(1 << 20, 4 << 20));
  r.contextReady(fakeEnv());
  g_refuse = true;
  void* a = map(1 << 20);
  r.mapped(a, 1 << 20, kFlags);
  EXPECT_FALSE(r.transfer(a, 1, true));
  g_refuse = false;
  EXPECT_FALSE(r.transfer(a, 1, true));  // still pageable: refused once, never tried again
  EXPECT_EQ(g_created.load(), 0);
  std::string s = r.stats();
  EXPECT_NE(s.find("1 refused"), std::string::npos) << s;
  EXPECT_NE(s.find("last refusal"), std::string::npos) << s;
  unmap(r, a, 1 << 20);
  EXPECT_EQ(g_released.load(), 0);
}

// The program registers the memory itself (its own USE_HOST_PTR buffer): ours goes first, for
// good, so that a driver refusing a second registration of the same pages never fails the program.
TEST_F(Registry, ProgramsOwnHostPointerBufferTakesOver) {
  InplaceRegistry r(mappingPlan(1 << 20, 4 << 20));
  r.contextReady(fakeEnv());
  void* a = map(2 << 20);
  r.mapped(a, 2 << 20, kFlags);
  EXPECT_TRUE(r.transfer(a, 1, true));
  r.yieldTo(static_cast<char*>(a) + 4096, 8192);
  EXPECT_EQ(g_released.load(), 1);
  EXPECT_FALSE(r.transfer(a, 1, true));  // not registered again
  EXPECT_EQ(g_created.load(), 1);
  std::string s = r.stats();
  EXPECT_NE(s.find("1 left to the program's own"), std::string::npos) << s;
  unmap(r, a, 2 << 20);
  EXPECT_EQ(g_released.load(), 1);
  // A mapping never registered yet is not registered later either.
  void* b = map(2 << 20);
  r.mapped(b, 2 << 20, kFlags);
  r.yieldTo(b, 2 << 20);
  EXPECT_FALSE(r.transfer(b, 1, true));
  EXPECT_EQ(g_created.load(), 1);
  unmap(r, b, 2 << 20);
}

TEST_F(Registry, ForkedChildReleasesNothing) {
  InplaceRegistry r(mappingPlan(1 << 20, 4 << 20));
  r.contextReady(fakeEnv());
  void* a = map(1 << 20);
  r.mapped(a, 1 << 20, kFlags);
  EXPECT_TRUE(r.transfer(a, 1, true));
  r.forkChild();  // the buffer belongs to the parent's context
  EXPECT_FALSE(r.transfer(a, 1, true));
  EXPECT_FALSE(r.unmapping(a, 1 << 20, false));
  EXPECT_EQ(g_released.load(), 0);
  ASSERT_EQ(munmap(a, 1 << 20), 0);
}

// Threads map, transfer and unmap their own mappings while others do the same: every release
// comes before its munmap, and every registration is released.
TEST_F(Registry, ThreadsMapTransferAndUnmapConcurrently) {
  InplaceRegistry r(mappingPlan(64 << 10, 1 << 20));
  r.contextReady(fakeEnv());
  std::vector<std::thread> threads;
  std::atomic<int> registered{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes = (64 << 10) * (1 + i % 4);
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kFlags, -1, 0);
        if (p == MAP_FAILED) continue;
        r.mapped(p, bytes, kFlags);
        if (r.transfer(static_cast<char*>(p) + bytes / 2, 8, i % 2 == 0)) registered.fetch_add(1);
        r.unmapping(p, bytes, false);
        munmap(p, bytes);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(registered.load(), 800);
  EXPECT_EQ(g_created.load(), 800);
  EXPECT_EQ(g_released.load(), 800);
  EXPECT_EQ(g_releasedUnmapped.load(), 0);
}

}  // namespace
}  // namespace hetopt::shim
