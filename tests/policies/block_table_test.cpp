// SPDX-License-Identifier: MIT
/**
 * @file The lock-free table of live blocks (policies/block_table.h): lookups by start and from
 * inside a block, a full table refusing, tombstones swept by the rebuild into the twin array,
 * readers on other threads while the owner churns, and validate() after each step. Built twice
 * (tests/policies/CMakeLists.txt): at HETOPT_DEBUG_LEVEL 3 every insert and erase validates the
 * whole table.
 */
#include "policies/block_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace hetopt::policies {
namespace {

#define EXPECT_VALID(table)                                \
  do {                                                     \
    char why[256] = {};                                    \
    EXPECT_TRUE((table).validate(why, sizeof why)) << why; \
  } while (0)

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(BlockTable, ABlockIsFoundByItsStartAndFromInsideUntilErased) {
  BlockTable<unsigned> table(8);
  ASSERT_TRUE(table.insert(at(0x10000), 4096, 7));
  EXPECT_TRUE(table.owns(at(0x10000)));
  EXPECT_EQ(table.usableSize(at(0x10000)), 4096u);
  EXPECT_FALSE(table.owns(at(0x10010)));  // not a start
  EXPECT_EQ(table.containing(at(0x10010)), 0x10000u);
  EXPECT_EQ(table.containing(at(0x11000)), 0u);  // one past the end
  ASSERT_NE(table.valueOf(at(0x10000)), nullptr);
  EXPECT_EQ(*table.valueOf(at(0x10000)), 7u);
  unsigned value = 0;
  EXPECT_TRUE(table.erase(at(0x10000), &value));
  EXPECT_EQ(value, 7u);
  EXPECT_FALSE(table.owns(at(0x10000)));
  EXPECT_FALSE(table.erase(at(0x10000), nullptr));
  EXPECT_VALID(table);
}

TEST(BlockTable, AFullTableRefusesAndAnEmptyBlockIsNeverInserted) {
  BlockTable<unsigned> table(4);  // 16 slots, 8 live at most
  for (uintptr_t i = 1; i <= 8; ++i) EXPECT_TRUE(table.insert(at(i << 16), 64, 0)) << i;
  EXPECT_TRUE(table.full());
  EXPECT_FALSE(table.insert(at(9 << 16), 64, 0));
  EXPECT_FALSE(table.insert(at(10 << 16), 0, 0));
  EXPECT_EQ(table.liveBlocks(), 8u);
  EXPECT_VALID(table);
}

TEST(BlockTable, TombstonesAreSweptAndEveryLiveBlockSurvivesTheRebuild) {
  BlockTable<unsigned> table(64);
  std::vector<uintptr_t> live;
  for (uintptr_t round = 0; round < 50; ++round) {
    for (uintptr_t i = 0; i < 20; ++i) {
      const uintptr_t a = (round * 20 + i + 1) << 12;
      ASSERT_TRUE(table.insert(at(a), 256, static_cast<unsigned>(a >> 12)));
      live.push_back(a);
    }
    while (live.size() > 40) {  // the oldest go: tombstones pile up and force rebuilds
      ASSERT_TRUE(table.erase(at(live.front()), nullptr));
      live.erase(live.begin());
    }
  }
  EXPECT_VALID(table);
  for (uintptr_t a : live) {
    ASSERT_NE(table.valueOf(at(a)), nullptr) << a;
    EXPECT_EQ(*table.valueOf(at(a)), a >> 12);
  }
  unsigned count = 0;
  table.forEach([&](uintptr_t, size_t, unsigned) { ++count; });
  EXPECT_EQ(count, live.size());
}

TEST(BlockTable, ReadersOnOtherThreadsAlwaysFindABlockThatStaysWhileTheOwnerChurns) {
  BlockTable<unsigned> table(256);
  ASSERT_TRUE(table.insert(at(0x7000000), 1 << 20, 1));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (table.usableSize(at(0x7000000)) != (1u << 20)) misses.fetch_add(1);
        if (table.containing(at(0x7000000 + 4096)) != 0x7000000) misses.fetch_add(1);
      }
    });
  for (uintptr_t round = 0; round < 40; ++round) {  // the owner's lock is this thread
    for (uintptr_t i = 1; i <= 100; ++i) ASSERT_TRUE(table.insert(at(i << 16), 64, 0));
    for (uintptr_t i = 1; i <= 100; ++i) ASSERT_TRUE(table.erase(at(i << 16), nullptr));
  }
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_VALID(table);
}

}  // namespace
}  // namespace hetopt::policies
