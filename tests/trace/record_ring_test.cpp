// SPDX-License-Identifier: MIT
/**
 * @file The record ring (trace/record_ring.h): records of every size come out whole, in each
 * producer's order, with producers on several threads and a ring far too small for them (so they
 * wait on the consumer); a record claimed but not yet written holds back the ones after it; the
 * gate holds new producers until it opens.
 */
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "trace/record_ring.h"

namespace hetopt::trace {
namespace {

void yieldStall(void*) { sched_yield(); }

/// A record of `bytes` (>= 16): producer, sequence number, then a pattern of both.
void fill(unsigned char* out, size_t bytes, uint32_t producer, uint32_t seq) {
  memcpy(out, &producer, 4);
  memcpy(out + 4, &seq, 4);
  for (size_t i = 8; i < bytes; ++i) out[i] = static_cast<unsigned char>(producer * 31 + seq * 7 + i);
}

TEST(RecordRing, ManyProducersKeepOrderAndContentThroughBackPressure) {
  RecordRing ring(64);  // 64 slots: records of up to 8 slots, many producers, constant waiting
  constexpr uint32_t kProducers = 4, kRecords = 3000;
  std::atomic<bool> done{false};
  std::vector<std::thread> producers;
  for (uint32_t p = 0; p < kProducers; ++p)
    producers.emplace_back([&ring, p] {
      unsigned char rec[512];
      for (uint32_t s = 0; s < kRecords; ++s) {
        const size_t bytes = 16 + (s * 37 + p * 11) % 400;
        fill(rec, bytes, p, s);
        ASSERT_TRUE(ring.push(rec, bytes, yieldStall, nullptr));
      }
    });
  std::vector<uint32_t> next(kProducers, 0);
  uint64_t got = 0;
  std::thread consumer([&] {
    alignas(8) unsigned char out[RecordRing::kMaxRecord];
    unsigned char want[512];
    while (!done.load() || !ring.empty()) {
      const size_t len = ring.pop(out);
      if (!len) {
        sched_yield();
        continue;
      }
      uint32_t p, s;
      memcpy(&p, out, 4);
      memcpy(&s, out + 4, 4);
      ASSERT_LT(p, kProducers);
      ASSERT_EQ(s, next[p]) << "producer " << p << " out of order";
      ASSERT_EQ(len, 16 + (s * 37 + p * 11) % 400);
      fill(want, len, p, s);
      ASSERT_EQ(0, memcmp(out, want, len)) << "record " << p << "/" << s << " damaged";
      ++next[p];
      ++got;
    }
  });
  for (auto& t : producers) t.join();
  done = true;
  consumer.join();
  EXPECT_EQ(got, uint64_t{kProducers} * kRecords);
  EXPECT_TRUE(ring.empty());
}

TEST(RecordRing, AClaimedRecordHoldsBackLaterOnesUntilWritten) {
  RecordRing ring(64);
  alignas(8) unsigned char rec[100], out[RecordRing::kMaxRecord];
  fill(rec, 100, 1, 0);
  ASSERT_TRUE(ring.push(rec, 100, yieldStall, nullptr));
  const RecordRing::Reservation held = ring.reserve(100, yieldStall, nullptr);  // a writer interrupted
  fill(rec, 100, 1, 2);
  ASSERT_TRUE(ring.push(rec, 100, yieldStall, nullptr));
  EXPECT_EQ(ring.pop(out), 100u);
  EXPECT_EQ(ring.pop(out), 0u) << "popped past a record still being written";
  EXPECT_FALSE(ring.empty());
  fill(rec, 100, 1, 1);
  ring.commit(held, rec, yieldStall, nullptr);
  for (uint32_t s = 1; s <= 2; ++s) {
    ASSERT_EQ(ring.pop(out), 100u);
    uint32_t seq;
    memcpy(&seq, out + 4, 4);
    EXPECT_EQ(seq, s);
  }
  EXPECT_TRUE(ring.empty());
}

TEST(RecordRing, TheGateHoldsNewRecordsAndResetDropsHalfWrittenOnes) {
  RecordRing ring(64);
  alignas(8) unsigned char rec[32] = {}, out[RecordRing::kMaxRecord];
  ASSERT_TRUE(ring.push(rec, 32, yieldStall, nullptr));
  const uint64_t head = ring.close();
  EXPECT_EQ(head, ring.head());
  std::atomic<bool> pushed{false};
  std::thread late([&] {
    ring.push(rec, 32, yieldStall, nullptr);
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(pushed.load()) << "a record went in through the closed gate";
  EXPECT_EQ(ring.pop(out), 32u);
  ring.open();
  late.join();
  EXPECT_EQ(ring.pop(out), 32u);
  // A forked child's view: one record claimed and never written, dropped by reset().
  ring.reserve(32, yieldStall, nullptr);
  ring.reset();
  EXPECT_TRUE(ring.empty());
  ASSERT_TRUE(ring.push(rec, 32, yieldStall, nullptr));
  EXPECT_EQ(ring.pop(out), 32u);
}

}  // namespace
}  // namespace hetopt::trace
