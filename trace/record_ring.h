// SPDX-License-Identifier: MIT
/**
 * @file A bounded multi-producer, single-consumer queue of variable-length byte records, in one
 * total order: how the shim's trace mode hands each call and allocation from the program's
 * threads to its recording thread. No lock, no allocation after construction; a producer that
 * finds the ring full waits (back-pressure): nothing is ever dropped. Consumer functions (front,
 * release, pop, validate) must be called by one thread at a time (the caller's lock).
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/check.h"

namespace hetopt::trace {

/// Cells of 64 bytes in a power-of-two ring; a record takes consecutive cells, its bytes one
/// contiguous run from its first cell's start (a 128-byte record takes 2 cells), so a producer
/// writes it in place and the consumer reads it in place. The cells' sequence words, and each
/// record's length, sit in arrays beside them (Vyukov's bounded queue): a cell's word holds its
/// ticket once the same cell's ticket of the lap before was consumed (free for this lap), and a
/// record's first cell's word its ticket + 1 once published. A producer claims its cells with one
/// compare-and-swap on the head (its ticket: the record's place in the order), waits until its
/// last cell is free (the consumer frees in ticket order, so the ones before it are too), writes,
/// and publishes with one store. A record that runs past the ring's end goes on into a spill area
/// after it (as long as the largest record), so its bytes stay contiguous; that area is only ever
/// written by the one record that wraps, guarded by the sequence words of the cells it stands for.
///
/// Invariants (validate() checks them, against any number of producers running; at
/// HETOPT_DEBUG_LEVEL 3 after every release and reset):
///   R1  tail <= head: the consumer never passes a ticket no producer claimed
///   R2  for every ticket t in [tail, tail + cells): its cell's sequence word is t (free for t, or
///       claimed and not yet published) or t + 1 (t is a published record's first cell)
///   R3  a published record is 1..kMaxRecord bytes, and every other cell it covers is unpublished
class RecordRing {
 public:
  static constexpr size_t kCellBytes = 64;
  static constexpr size_t kMaxRecord = 4096;  ///< bytes; larger records are refused (push: false)

  /// `cells`: a power of two, at least 4 * the cells of the largest record.
  explicit RecordRing(size_t cells = 8192);
  ~RecordRing();
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;

  /// Called while a producer waits for free cells (or for the gate), with the caller's context.
  using Stall = void (*)(void* context);

  struct Reservation {
    unsigned char* data = nullptr;  ///< where the record's `bytes` go (64-aligned, contiguous)
    uint64_t ticket = 0;
    uint32_t cells = 0;
    uint32_t bytes = 0;
  };
  /// Claims the cells for a record of `bytes` (at most kMaxRecord), waiting while the gate is
  /// closed and then until the cells are free. Write the record at `data`, then publish().
  Reservation reserve(size_t bytes, Stall stall, void* context);
  /// The record written at the reservation's `data` is whole: the consumer may take it.
  void publish(const Reservation& r) {
    HETOPT_ASSERT(r.data != nullptr && r.bytes <= kMaxRecord);
    m_length[r.ticket & m_mask] = r.bytes;
    m_seq[r.ticket & m_mask].store(r.ticket + 1, std::memory_order_release);
  }
  /// reserve + copy + publish. False (nothing queued) for a record over kMaxRecord.
  bool push(const void* data, size_t bytes, Stall stall, void* context) {
    if (bytes > kMaxRecord) return false;
    const Reservation r = reserve(bytes, stall, context);
    memcpy(r.data, data, bytes);
    publish(r);
    return true;
  }

  /// Consumer: the next record, in place, if published (its length in `bytes`); null when none
  /// is ready. It stays valid until release().
  const unsigned char* front(size_t* bytes) const;
  /// Consumer: frees the record front() returned.
  void release();
  /// Consumer: copies the next record, if published, into `out` (kMaxRecord bytes) and returns
  /// its length; 0 when none is ready.
  size_t pop(void* out);
  /// Nothing claimed is left to pop (else the rest is published or still being written).
  bool empty() const { return tail() >= head(); }
  /// Tickets: the next one to be claimed, and the next one the consumer takes.
  uint64_t head() const { return m_head.load(std::memory_order_acquire) & ~kClosed; }
  uint64_t tail() const { return m_tail.load(std::memory_order_acquire); }

  /// Closes the gate; returns the head then (every record before it is claimed). While closed,
  /// new reservations wait; records already claimed complete. The fork protocol closes it, drains
  /// to the head it returned, and forks with the ring empty.
  uint64_t close() { return m_head.fetch_or(kClosed, std::memory_order_acq_rel) & ~kClosed; }
  void open() { m_head.fetch_and(~kClosed, std::memory_order_acq_rel); }
  /// Only thread left (a forked child): drops whatever is queued or half-written and opens.
  void reset();
  /// Consumer: checks R1-R3; false with the first broken one in `why`.
  bool validate(char* why = nullptr, size_t whyBytes = 0) const;

 private:
  static constexpr uint64_t kClosed = 1ull << 63;
  static uint32_t cellsFor(size_t bytes) {
    return static_cast<uint32_t>((bytes + kCellBytes - 1) / kCellBytes);
  }
  unsigned char* cell(uint64_t ticket) const { return m_data + (ticket & m_mask) * kCellBytes; }

  std::atomic<uint64_t>* m_seq;
  uint32_t* m_length;     ///< by a record's first cell; written before it is published
  unsigned char* m_data;  ///< capacity cells, then the spill area
  uint64_t m_mask;
  alignas(64) std::atomic<uint64_t> m_head{0};
  alignas(64) std::atomic<uint64_t> m_tail{0};
};

}  // namespace hetopt::trace
