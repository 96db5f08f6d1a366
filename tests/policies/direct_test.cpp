// SPDX-License-Identifier: MIT
/**
 * @file DirectAllocator (policies/direct.h): the bookkeeping of the pool-less variant. A fake
 * policy makes dirty, countable blocks, so that zeroing, releases, failures and alignment are seen
 * exactly; then the real standard policy under several threads.
 */
#include "policies/direct.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using hetopt::Allocation;
using hetopt::AllocationPolicy;
using hetopt::PolicyEnv;
using hetopt::PolicyKind;
using hetopt::PolicyStatus;
using hetopt::policies::DirectAllocator;

namespace {

/// Page-aligned blocks filled with 0xAB; counts calls; can fail or misalign on demand.
class FakePolicy final : public AllocationPolicy {
 public:
  FakePolicy() : AllocationPolicy(PolicyEnv{}) {}
  PolicyKind kind() const override { return PolicyKind::Locked; }
  PolicyStatus availability(size_t) const override { return {}; }
  PolicyStatus allocate(size_t size, Allocation* out) override {
    ++allocations;
    if (fail) return PolicyStatus::failure(CL_SUCCESS, 12, "fake refusal");
    *out = Allocation{};
    out->size = size ? size : 1;
    void* p = std::aligned_alloc(4096, (out->size + 4095 + 64) & ~size_t{4095});
    memset(p, 0xab, out->size);
    out->base = p;
    out->ptr = static_cast<char*>(p) + (misalign ? 16 : 0);
    return {};
  }
  PolicyStatus release(Allocation* a) override {
    ++releases;
    std::free(a->base);
    *a = Allocation{};
    return {};
  }
  std::atomic<int> allocations{0}, releases{0};
  bool fail = false, misalign = false;
};

}  // namespace

TEST(DirectAllocator, BlocksAreOwnedUsableAndReleasedWithThePolicy) {
  FakePolicy policy;
  DirectAllocator d(64);
  EXPECT_EQ(d.allocate(100, 0, false), nullptr);  // no policy yet
  d.setPolicy(&policy);
  auto* p = static_cast<char*>(d.allocate(100, 0, false));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
  EXPECT_TRUE(d.owns(p));
  EXPECT_FALSE(d.owns(p + 16));     // free() takes block starts only
  EXPECT_TRUE(d.contains(p + 50));  // transfers may start inside
  EXPECT_FALSE(d.contains(p + 4096));
  EXPECT_GE(d.usableSize(p), 100u);
  memset(p, 1, d.usableSize(p));  // all of it writable
  int x = 0;
  EXPECT_FALSE(d.owns(&x));
  EXPECT_EQ(d.stats().liveBlocks, 1u);
  d.deallocate(p);
  EXPECT_FALSE(d.owns(p));
  EXPECT_EQ(policy.releases, 1);
  EXPECT_EQ(d.stats().liveBlocks, 0u);
  EXPECT_EQ(d.stats().allocations, 1u);
}

TEST(DirectAllocator, CallocZeroesWhatThePolicyLeftDirty) {
  FakePolicy policy;
  DirectAllocator d(64);
  d.setPolicy(&policy);
  auto* p = static_cast<unsigned char*>(d.allocate(5000, 0, true));
  ASSERT_NE(p, nullptr);
  for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(p[i], 0) << i;
  auto* q = static_cast<unsigned char*>(d.allocate(5000, 0, false));
  EXPECT_EQ(q[0], 0xab);  // the fake really is dirty
  d.deallocate(p);
  d.deallocate(q);
}

TEST(DirectAllocator, ReallocKeepsTheContentsAndShrinksInPlace) {
  FakePolicy policy;
  DirectAllocator d(64);
  d.setPolicy(&policy);
  auto* p = static_cast<unsigned char*>(d.allocate(1000, 0, false));
  for (int i = 0; i < 1000; ++i) p[i] = static_cast<unsigned char>(i * 7);
  EXPECT_EQ(d.reallocate(p, 500), p);
  auto* q = static_cast<unsigned char*>(d.reallocate(p, 100000));
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(q[i], static_cast<unsigned char>(i * 7)) << i;
  EXPECT_FALSE(d.owns(p));
  EXPECT_TRUE(d.owns(q));
  EXPECT_EQ(policy.releases, 1);
  policy.fail = true;  // no room: null, the block untouched for the caller to move
  EXPECT_EQ(d.reallocate(q, 1 << 20), nullptr);
  EXPECT_TRUE(d.owns(q));
  EXPECT_EQ(q[999], static_cast<unsigned char>(999 * 7));
  d.deallocate(q);
}

TEST(DirectAllocator, FailuresAreCountedWithTheFirstReason) {
  FakePolicy policy;
  DirectAllocator d(64);
  d.setPolicy(&policy);
  policy.fail = true;
  EXPECT_EQ(d.allocate(100, 0, false), nullptr);
  policy.fail = false;
  EXPECT_EQ(d.allocate(100, 8192, false), nullptr);        // above a page
  EXPECT_EQ(d.allocate(SIZE_MAX - 8, 0, false), nullptr);  // rounding up must not wrap to 0
  policy.misalign = true;
  EXPECT_EQ(d.allocate(100, 64, false), nullptr);  // the policy's block is only 16-aligned
  EXPECT_EQ(policy.releases, 1);                   // ... and was given back
  void* p = d.allocate(100, 16, false);            // which is enough for malloc's alignment
  EXPECT_NE(p, nullptr);
  d.deallocate(p);
  EXPECT_EQ(d.stats().failures, 4u);
  EXPECT_STREQ(d.stats().firstFailure, "fake refusal");
}

TEST(DirectAllocator, AFullTableFailsAndManyCyclesKeepLookupsRight) {
  FakePolicy policy;
  DirectAllocator d(8);  // 16 slots, 8 live blocks
  d.setPolicy(&policy);
  std::vector<void*> live;
  for (int i = 0; i < 8; ++i) live.push_back(d.allocate(64, 0, false));
  for (void* p : live) ASSERT_NE(p, nullptr);
  EXPECT_EQ(d.allocate(64, 0, false), nullptr);
  EXPECT_STREQ(d.stats().firstFailure, "too many live blocks");
  // Thousands of frees leave tombstones; rebuilds sweep them and every lookup stays right.
  std::mt19937 rng(7);
  std::vector<void*> freed;
  for (int i = 0; i < 5000; ++i) {
    size_t k = rng() % live.size();
    d.deallocate(live[k]);
    live[k] = d.allocate(64 + rng() % 4096, 0, false);
    ASSERT_NE(live[k], nullptr);
    for (void* p : live) ASSERT_TRUE(d.owns(p));
  }
  EXPECT_EQ(d.stats().liveBlocks, 8u);
  for (void* p : live) d.deallocate(p);
  for (void* p : live) EXPECT_FALSE(d.owns(p));
  EXPECT_EQ(policy.allocations.load(), policy.releases.load());  // the refused one never asked it
}

TEST(DirectAllocator, AForkedChildNeverReleasesOrAllocates) {
  FakePolicy policy;
  DirectAllocator d(64);
  d.setPolicy(&policy);
  void* p = d.allocate(100, 0, false);
  d.forkChild();
  d.deallocate(p);
  EXPECT_EQ(policy.releases, 0);
  EXPECT_TRUE(d.owns(p));  // stays valid, and still routed away from the system allocator
  EXPECT_EQ(d.allocate(100, 0, false), nullptr);
}

// Threads allocating and freeing while others ask about foreign and live pointers (the shim's
// free() path): no false answer, whatever the rebuilds do meanwhile.
TEST(DirectAllocator, LookupsStayRightUnderConcurrentUse) {
  auto policy = hetopt::makePolicy(PolicyKind::Standard, PolicyEnv{});
  DirectAllocator d(256);
  d.setPolicy(policy.get());
  std::atomic<bool> stop{false}, wrong{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<char*> mine;
      for (int i = 0; i < 20000; ++i) {
        if (mine.size() < 20 && rng() % 2) {
          size_t n = 16 + rng() % 2000;
          auto* p = static_cast<char*>(d.allocate(n, 0, rng() % 2));
          if (!p) continue;
          memset(p, t, n);
          mine.push_back(p);
        } else if (!mine.empty()) {
          char* p = mine.back();
          mine.pop_back();
          if (!d.owns(p) || p[0] != t) wrong = true;
          d.deallocate(p);
        }
      }
      for (char* p : mine) d.deallocate(p);
    });
  }
  std::thread foreign([&] {
    std::vector<void*> blocks;
    for (int i = 0; i < 64; ++i) blocks.push_back(std::malloc(100 + i));
    while (!stop)
      for (void* p : blocks)
        if (d.owns(p) || d.contains(p)) wrong = true;
    for (void* p : blocks) std::free(p);
  });
  for (auto& t : threads) t.join();
  stop = true;
  foreign.join();
  EXPECT_FALSE(wrong);
  EXPECT_EQ(d.stats().liveBlocks, 0u);
}
