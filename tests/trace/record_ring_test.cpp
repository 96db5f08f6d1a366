// SPDX-License-Identifier: MIT
/**
 * @file The record ring (trace/record_ring.h): records of every size come out whole, in each
 * producer's order, with producers on several threads and a ring far too small for them (so they
 * wait on the consumer); a record claimed but not yet written holds back the ones after it; the
 * gate holds new producers until it opens; a record is written and read in place, one contiguous
 * run of bytes even where it wraps past the ring's end; a producer waits for its cells to be read.
 */
#include "trace/record_ring.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace hetopt::trace {
namespace {

void yieldStall(void*) { sched_yield(); }

/// A record of `bytes` (>= 16): producer, sequence number, then a pattern of both.
void fill(unsigned char* out, size_t bytes, uint32_t producer, uint32_t seq) {
  memcpy(out, &producer, 4);
  memcpy(out + 4, &seq, 4);
  for (size_t i = 8; i < bytes; ++i)
    out[i] = static_cast<unsigned char>(producer * 31 + seq * 7 + i);
}

TEST(RecordRing, ManyProducersKeepOrderAndContentThroughBackPressure) {
  RecordRing ring(64);  // 64 cells: records of up to 8 cells, many producers, constant waiting
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
  const RecordRing::Reservation held =
      ring.reserve(100, yieldStall, nullptr);  // a writer interrupted
  fill(rec, 100, 1, 2);
  ASSERT_TRUE(ring.push(rec, 100, yieldStall, nullptr));
  EXPECT_EQ(ring.pop(out), 100u);
  EXPECT_EQ(ring.pop(out), 0u) << "popped past a record still being written";
  EXPECT_FALSE(ring.empty());
  fill(held.data, 100, 1, 1);
  ring.publish(held);
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

TEST(RecordRing, RecordsStayContiguousInPlaceAcrossTheRingsEnd) {
  RecordRing ring(64);  // 4 KiB of cells
  // Records of 3 cells (184 bytes): 21 of them fill 63 cells, the 22nd wraps.
  for (uint32_t s = 0; s < 200; ++s) {
    const RecordRing::Reservation r = ring.reserve(184, yieldStall, nullptr);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(r.data) % RecordRing::kCellBytes, 0u);
    ASSERT_EQ(r.cells, 3u);
    fill(r.data, 184, 7, s);
    ring.publish(r);
    size_t len = 0;
    const unsigned char* got = ring.front(&len);
    ASSERT_EQ(got, r.data) << "record " << s << " not read where it was written";
    ASSERT_EQ(len, 184u);
    unsigned char want[184];
    fill(want, 184, 7, s);
    ASSERT_EQ(0, memcmp(got, want, 184))
        << "record " << s << " (ticket " << r.ticket << ") damaged";
    ring.release();
  }
  EXPECT_GT(ring.tail(), 64u * 3) << "the records did not wrap";
  EXPECT_TRUE(ring.empty());
  // A record fills its cells: 128 bytes take two (nothing else shares them).
  const RecordRing::Reservation two = ring.reserve(128, yieldStall, nullptr);
  EXPECT_EQ(two.cells, 2u);
  ring.publish(two);
  ring.release();
}

TEST(RecordRing, AProducerWaitsUntilItsCellsAreRead) {
  RecordRing ring(64);
  // 64 one-cell records fill the ring.
  alignas(8) unsigned char rec[56];
  for (uint32_t s = 0; s < 64; ++s) {
    fill(rec, 56, 2, s);
    ASSERT_TRUE(ring.push(rec, 56, yieldStall, nullptr));
  }
  std::atomic<int> stalls{0};
  std::atomic<bool> reserved{false};
  std::thread late([&] {
    const RecordRing::Reservation r = ring.reserve(
        56,
        [](void* c) {
          ++*static_cast<std::atomic<int>*>(c);
          sched_yield();
        },
        &stalls);
    reserved = true;
    memset(r.data, 0xee, 56);
    ring.publish(r);
  });
  while (stalls.load() < 3) sched_yield();
  EXPECT_FALSE(reserved.load()) << "a producer took cells the consumer had not read";
  size_t len = 0;
  const unsigned char* first = ring.front(&len);
  ASSERT_NE(first, nullptr);
  fill(rec, 56, 2, 0);
  EXPECT_EQ(0, memcmp(first, rec, 56)) << "the oldest record was overwritten before it was read";
  ring.release();
  late.join();
  EXPECT_TRUE(reserved.load());
  alignas(8) unsigned char out[RecordRing::kMaxRecord];
  for (uint32_t s = 1; s < 64; ++s) {
    ASSERT_EQ(ring.pop(out), 56u);
    fill(rec, 56, 2, s);
    ASSERT_EQ(0, memcmp(out, rec, 56)) << "record " << s;
  }
  ASSERT_EQ(ring.pop(out), 56u);
  EXPECT_EQ(out[0], 0xee);
  EXPECT_TRUE(ring.empty());
}

}  // namespace
}  // namespace hetopt::trace
