// SPDX-License-Identifier: MIT
/**
 * @file A bounded multi-producer, single-consumer queue of variable-length byte records, in one
 * total order: how the shim's trace mode hands each call and allocation from the program's
 * threads to its recording thread.
 *
 * Slots of 64 bytes (an 8-byte sequence word, 56 bytes of payload) in a power-of-two ring; a
 * record takes consecutive slots. A producer claims its slots with one compare-and-swap on the
 * head (its ticket: the record's place in the order), copies, and publishes slot by slot; the
 * consumer takes a record once all its slots are published (each slot's sequence word: ticket
 * + 1 when published, ticket + capacity once consumed and free for the next lap, Vyukov's
 * bounded queue). No lock, no allocation after construction. A producer whose slots are not free
 * yet (the ring is full) waits, calling the caller's stall function between tries: back-pressure,
 * nothing is ever dropped.
 *
 * The gate (close/open): while closed, new reservations wait; records already claimed complete.
 * The fork protocol closes it, drains to the head it returned, and forks with the ring empty.
 *
 * Consumer functions (pop) must be called by one thread at a time (the caller's lock).
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hetopt::trace {

class RecordRing {
 public:
  static constexpr size_t kSlotBytes = 64;
  static constexpr size_t kPayload = kSlotBytes - 8;
  static constexpr size_t kMaxRecord = 4096;  ///< bytes; larger records are refused (push: false)

  /// `slots`: a power of two, at least 4 * the slots of the largest record.
  explicit RecordRing(size_t slots = 8192);
  ~RecordRing();
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;

  /// Called while a producer waits for free slots (or for the gate), with the caller's context.
  using Stall = void (*)(void* context);

  struct Reservation {
    uint64_t ticket = 0;
    uint32_t slots = 0;
    uint32_t bytes = 0;
  };
  /// Claims the slots for a record of `bytes` (waiting while the gate is closed).
  Reservation reserve(size_t bytes, Stall stall, void* context);
  /// Copies the record into its slots (waiting, with `stall`, for each to be free) and publishes it.
  void commit(const Reservation& r, const void* data, Stall stall, void* context);
  /// reserve + commit. False (nothing queued) for a record over kMaxRecord.
  bool push(const void* data, size_t bytes, Stall stall, void* context) {
    if (bytes > kMaxRecord) return false;
    commit(reserve(bytes, stall, context), data, stall, context);
    return true;
  }

  /// Consumer: copies the next record, if wholly published, into `out` (kMaxRecord bytes) and
  /// returns its length; 0 when none is ready.
  size_t pop(void* out);
  /// Nothing claimed is left to pop (else the rest is published or still being written).
  bool empty() const { return tail() >= head(); }
  /// Tickets: the next one to be claimed, and the next one the consumer takes.
  uint64_t head() const { return m_head.load(std::memory_order_acquire) & ~kClosed; }
  uint64_t tail() const { return m_tail.load(std::memory_order_acquire); }

  /// Closes the gate; returns the head then (every record before it is claimed).
  uint64_t close() { return m_head.fetch_or(kClosed, std::memory_order_acq_rel) & ~kClosed; }
  void open() { m_head.fetch_and(~kClosed, std::memory_order_acq_rel); }
  /// Only thread left (a forked child): drops whatever is queued or half-written and opens.
  void reset();

 private:
  struct alignas(kSlotBytes) Slot {
    std::atomic<uint64_t> seq;
    unsigned char data[kPayload];
  };
  static constexpr uint64_t kClosed = 1ull << 63;
  static uint32_t slotsFor(size_t bytes) { return static_cast<uint32_t>((bytes + 4 + kPayload - 1) / kPayload); }

  Slot* m_slots;
  uint64_t m_mask;
  alignas(64) std::atomic<uint64_t> m_head{0};
  alignas(64) std::atomic<uint64_t> m_tail{0};
};

}  // namespace hetopt::trace
