// SPDX-License-Identifier: MIT
/**
 * @file Heap blocks registered in place (shim/core/block_registration.h) against a fake OpenCL
 * whose USE_HOST_PTR buffers check, when released, that their memory is still the program's
 * (not yet freed): a registration released after the block's free would leave a real driver
 * holding pages the allocator gave back. A slow fake lets a test catch the worker mid-registration.
 */
#include "shim/core/block_registration.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/shim/fake_register_driver.h"

namespace hetopt::shim {
namespace {

struct FakeBuffer {
  void* host;
  size_t size;
};
std::mutex g_liveMutex;
std::set<void*> g_liveBlocks;  ///< blocks the test has not freed yet
std::atomic<int> g_created{0}, g_released{0}, g_releasedFreed{0};
std::atomic<int> g_createDelayMs{0};
std::atomic<bool> g_refuse{false};

cl_mem CL_API_CALL fakeCreateBuffer(cl_context, cl_mem_flags flags, size_t size, void* host,
                                    cl_int* err) {
  if (int ms = g_createDelayMs.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (g_refuse.load() || !(flags & CL_MEM_USE_HOST_PTR) || !host) {
    *err = CL_INVALID_HOST_PTR;
    return nullptr;
  }
  *err = CL_SUCCESS;
  g_created.fetch_add(1);
  return reinterpret_cast<cl_mem>(new FakeBuffer{host, size});
}
cl_int CL_API_CALL fakeRelease(cl_mem m) {
  auto* b = reinterpret_cast<FakeBuffer*>(m);
  {
    std::lock_guard<std::mutex> lock(g_liveMutex);
    if (!g_liveBlocks.count(b->host)) g_releasedFreed.fetch_add(1);
  }
  g_released.fetch_add(1);
  delete b;
  return CL_SUCCESS;
}
PolicyEnv fakeEnv() { return testing::fakeRegisterEnv(&fakeCreateBuffer, &fakeRelease); }

class BlockRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_created = g_released = g_releasedFreed = 0;
    g_createDelayMs = 0;
    g_refuse = false;
    m_plan.registerLatencyNs = 1000;
    m_plan.registerNsPerMiB = 100000;
  }
  void* block(BlockRegistration& r, size_t bytes, uint64_t waitNsPerMiB = 1000000000) {
    void* p = malloc(bytes);
    memset(p, 1, bytes);
    {
      std::lock_guard<std::mutex> lock(g_liveMutex);
      g_liveBlocks.insert(p);
    }
    EXPECT_TRUE(r.adopt(p, bytes, bytes, waitNsPerMiB));
    return p;
  }
  // What the optimize interceptor does on free(): the registration gives the block back to the
  // allocator (here: testFree) once its buffer is gone, on the worker or the calling thread.
  static void testFree(void* p) {
    {
      std::lock_guard<std::mutex> lock(g_liveMutex);
      g_liveBlocks.erase(p);
    }
    free(p);
  }
  void release(BlockRegistration& r, void* p) { r.release(p, &testFree); }
  static bool freed(void* p) {
    std::lock_guard<std::mutex> lock(g_liveMutex);
    return !g_liveBlocks.count(p);
  }
  static bool eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 2000 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
  }
  Plan m_plan;
};

TEST_F(BlockRegistrationTest, BlocksMadeBeforeTheContextArePinnedByTheWorkerOnceItExists) {
  BlockRegistration r(m_plan);
  void* a = block(r, 1 << 20);
  void* b = block(r, 2 << 20);
  EXPECT_TRUE(r.owns(a));
  EXPECT_EQ(r.usableSize(b), size_t{2} << 20);
  EXPECT_FALSE(r.owns(static_cast<char*>(a) + 16));  // only block starts are owned (free())
  EXPECT_EQ(g_created.load(), 0);                    // no context yet: nothing registered
  // Before the context, a transfer cannot wait for anything: it goes ahead pageable, counted.
  EXPECT_FALSE(r.transfer(a, 1 << 20, true));
  r.start(fakeEnv(), 0);
  ASSERT_TRUE(eventually([] { return g_created.load() == 2; }));
  EXPECT_TRUE(r.transfer(static_cast<char*>(b) + 4096, 4096, false));  // an offset inside it
  EXPECT_TRUE(r.transfer(a, 1 << 20, true));
  int dummy;
  EXPECT_FALSE(r.transfer(&dummy, sizeof dummy, true));  // not ours
  EXPECT_EQ(r.pinnedTransfers(), 2u);
  release(r, a);
  release(r, b);
  EXPECT_FALSE(r.owns(a));  // at once: the address is no longer a registered block
  // The buffers are released and the blocks freed on the worker, in that order.
  ASSERT_TRUE(eventually([&] { return freed(a) && freed(b); }));
  EXPECT_EQ(g_released.load(), 2);
  EXPECT_EQ(g_releasedFreed.load(), 0);  // every buffer went before its block
  // The worker counts a release as done just after its free returns: wait for that count too.
  EXPECT_TRUE(eventually([&] {
    return r.stats().find("2 unpinned and freed on hetopt's thread (2 done") != std::string::npos;
  })) << r.stats();
  const std::string stats = r.stats();
  EXPECT_NE(stats.find("registered in place: 2 of 2 adopted"), std::string::npos) << stats;
  EXPECT_NE(stats.find("1 went ahead pageable"), std::string::npos) << stats;
}

TEST_F(BlockRegistrationTest, AFreeDuringTheRegistrationWaitsForItThenReleasesIt) {
  BlockRegistration r(m_plan);
  g_createDelayMs = 100;
  void* a = block(r, 1 << 20);
  r.start(fakeEnv(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the worker is inside the driver
  release(r, a);
  EXPECT_EQ(g_created.load(), 1);
  ASSERT_TRUE(eventually([&] { return freed(a); }));
  EXPECT_EQ(g_released.load(), 1);
  EXPECT_EQ(g_releasedFreed.load(), 0);
}

TEST_F(BlockRegistrationTest, ATransferNeverWaitsLongerThanThePageableCopyWouldTake) {
  // The register cost is more than the transfer's budget: it neither registers the block itself
  // nor waits past its budget for the (slow) worker; it goes ahead pageable.
  m_plan.registerLatencyNs = 50'000'000;
  BlockRegistration r(m_plan);
  g_createDelayMs = 400;
  void* first = block(r, 1 << 20);
  void* second = block(r, 1 << 20, 20'000'000);  // may wait 20 ms per MiB
  r.start(fakeEnv(), 0);                         // the worker is busy with `first` for 400 ms
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.transfer(second, 1 << 20, true));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(15));
  EXPECT_LT(waited, std::chrono::milliseconds(300));
  // Cheap enough: the transfer registers the block on its own thread rather than go pageable.
  m_plan.registerLatencyNs = 1000;
  g_createDelayMs = 0;
  void* third = block(r, 1 << 20);
  EXPECT_TRUE(r.transfer(third, 1 << 20, true));
  const std::string stats = r.stats();
  EXPECT_NE(stats.find("1 by the transfer itself"), std::string::npos) << stats;
  for (void* p : {first, second, third}) release(r, p);
  ASSERT_TRUE(eventually([&] { return freed(first) && freed(second) && freed(third); }));
  EXPECT_EQ(g_releasedFreed.load(), 0);
}

TEST_F(BlockRegistrationTest, RefusedRegistrationsStayPageableAndTheProgramsOwnBuffersComeFirst) {
  BlockRegistration r(m_plan);
  g_refuse = true;
  void* refused = block(r, 1 << 20);
  r.start(fakeEnv(), 0);
  ASSERT_TRUE(eventually([&] { return r.stats().find("1 refused") != std::string::npos; }));
  EXPECT_FALSE(r.transfer(refused, 1 << 20, true));
  g_refuse = false;
  void* wrapped = block(r, 1 << 20);
  ASSERT_TRUE(eventually([] { return g_created.load() == 1; }));
  // The program makes its own USE_HOST_PTR buffer over part of it: ours is released first and
  // never made again, yet the block stays the program's to free.
  r.yieldTo(static_cast<char*>(wrapped) + 4096, 8192);
  EXPECT_EQ(g_released.load(), 1);
  EXPECT_FALSE(r.transfer(wrapped, 1 << 20, true));
  EXPECT_TRUE(r.owns(wrapped));
  release(r, wrapped);
  release(r, refused);
  EXPECT_EQ(g_released.load(), 1);
  EXPECT_EQ(g_created.load(), 1);
  // Larger than the device's largest buffer: refused without asking the driver.
  BlockRegistration small(m_plan);
  void* big = block(small, 4 << 20);
  small.start(fakeEnv(), 1 << 20);
  ASSERT_TRUE(eventually([&] { return small.stats().find("1 refused") != std::string::npos; }));
  EXPECT_EQ(g_created.load(), 1);
  release(small, big);
}

TEST_F(BlockRegistrationTest, AForkedChildFreesWhatItInheritedWithoutTheDriver) {
  BlockRegistration r(m_plan);
  void* a = block(r, 1 << 20);
  r.start(fakeEnv(), 0);
  ASSERT_TRUE(eventually([] { return g_created.load() == 1; }));
  r.lockForFork();  // what the fork protocol does around fork()
  r.unlockAfterFork();
  r.forkChild();
  release(r, a);  // no buffer released: it is the parent's
  EXPECT_EQ(g_released.load(), 0);
  EXPECT_FALSE(r.owns(a));
  int* fresh = static_cast<int*>(malloc(1 << 20));
  EXPECT_FALSE(r.adopt(fresh, 1 << 20, 1 << 20, 1));  // nothing new in a child
  free(fresh);
}

// Many threads adopting, transferring and freeing while the worker registers (TSan runs this).
TEST_F(BlockRegistrationTest, ThreadsAdoptTransferAndFreeWhileTheWorkerRegisters) {
  BlockRegistration r(m_plan);
  r.start(fakeEnv(), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes = (64 << 10) * (1 + (i + t) % 4);
        void* p = block(r, bytes, 1000);
        r.transfer(static_cast<char*>(p) + 64, 64, i % 2 == 0);
        release(r, p);
      }
    });
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(eventually([] {
    std::lock_guard<std::mutex> lock(g_liveMutex);
    return g_liveBlocks.empty();
  }));
  EXPECT_EQ(g_created.load(), g_released.load());
  EXPECT_EQ(g_releasedFreed.load(), 0);
  EXPECT_NE(r.stats().find("800 adopted"), std::string::npos) << r.stats();
}

}  // namespace
}  // namespace hetopt::shim
