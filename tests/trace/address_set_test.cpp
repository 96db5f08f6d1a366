// SPDX-License-Identifier: MIT
/**
 * @file The lock-free block filter (trace/address_set.h): keys in and out, growth past its first
 * table with tombstones around, a reader on another thread while the owner inserts and erases,
 * with validate() holding after each. Built twice (tests/trace/CMakeLists.txt): at
 * HETOPT_DEBUG_LEVEL 3 every insert and erase validates the whole set.
 */
#include "trace/address_set.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace hetopt::trace {
namespace {

#define EXPECT_VALID(set)                                \
  do {                                                   \
    char why[256] = {};                                  \
    EXPECT_TRUE((set).validate(why, sizeof why)) << why; \
  } while (0)

TEST(AddressSet, AKeyIsFoundUntilItIsErased) {
  AddressSet set;
  EXPECT_FALSE(set.mayContain(0x1000));
  set.insert(0x1000);
  set.insert(0x1000);  // once
  EXPECT_TRUE(set.mayContain(0x1000));
  EXPECT_EQ(set.size(), 1u);
  set.erase(0x1000);
  EXPECT_FALSE(set.mayContain(0x1000));
  EXPECT_EQ(set.size(), 0u);
  set.erase(0x1000);  // not there: nothing happens
  EXPECT_VALID(set);
}

TEST(AddressSet, TheReservedKeysAreNeverInserted) {
  AddressSet set;
  set.insert(0);
  set.insert(1);
  EXPECT_EQ(set.size(), 0u);
  EXPECT_VALID(set);
}

TEST(AddressSet, ItGrowsPastItsFirstTableWithTombstonesAround) {
  AddressSet set;
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 5000; ++i) keys.push_back(0x7f0000000000ull + i * 4096);
  for (uint64_t k : keys) set.insert(k);
  for (size_t i = 0; i < keys.size(); i += 2) set.erase(keys[i]);
  for (uint64_t i = 0; i < 3000; ++i) set.insert(0x100000000ull + i * 64);
  EXPECT_VALID(set);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(set.mayContain(keys[i]), i % 2 == 1) << i;
  for (uint64_t i = 0; i < 3000; ++i) EXPECT_TRUE(set.mayContain(0x100000000ull + i * 64));
  EXPECT_EQ(set.size(), 2500u + 3000u);
}

TEST(AddressSet, AReaderOnAnotherThreadAlwaysFindsAKeyThatStaysIn) {
  AddressSet set;
  constexpr uint64_t kStays = 0xabc000;
  set.insert(kStays);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0};
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed))
      if (!set.mayContain(kStays)) misses.fetch_add(1);
  });
  for (uint64_t round = 0; round < 8; ++round) {  // the owner's thread: grows and churns
    for (uint64_t i = 1; i <= 2000; ++i) set.insert(round << 32 | i << 4);
    for (uint64_t i = 1; i <= 2000; ++i) set.erase(round << 32 | i << 4);
  }
  stop.store(true);
  reader.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_VALID(set);
}

}  // namespace
}  // namespace hetopt::trace
