// SPDX-License-Identifier: MIT
/** @file The record ring; see record_ring.h.
 * Waiting with the caller's stall function, reserve, front and release, reset, validate. */
#include "trace/record_ring.h"

#include <cstdarg>
#include <cstdio>
#include <new>

#include "common/check.h"

namespace hetopt::trace {

namespace {
constexpr int kSpins = 64;  ///< busy tries before the stall function is called
/// What a record of kMaxRecord bytes may run past the ring's end.
constexpr size_t kSpillBytes = RecordRing::kMaxRecord;

/// Spins, then calls `stall`, until `ready()`.
template <typename Ready>
void waitFor(Ready ready, RecordRing::Stall stall, void* context) {
  for (int spin = 0; !ready();) {
    if (++spin >= kSpins) {
      stall(context);
      spin = 0;
    } else {
      cpuRelax();
    }
  }
}
}  // namespace

RecordRing::RecordRing(size_t cells) : m_mask(cells - 1) {
  m_seq = static_cast<std::atomic<uint64_t>*>(
      ::operator new (cells * sizeof(std::atomic<uint64_t>), std::align_val_t{kCellBytes}));
  for (size_t i = 0; i < cells; ++i) new (&m_seq[i]) std::atomic<uint64_t>(i);
  m_length = new uint32_t[cells]();
  m_data = static_cast<unsigned char*>(
      ::operator new (cells* kCellBytes + kSpillBytes, std::align_val_t{kCellBytes}));
}

RecordRing::~RecordRing() {
  ::operator delete (m_data, std::align_val_t{kCellBytes});
  ::operator delete (m_seq, std::align_val_t{kCellBytes});
  delete[] m_length;
}

RecordRing::Reservation RecordRing::reserve(size_t bytes, Stall stall, void* context) {
  HETOPT_ASSERT(bytes <= kMaxRecord);
  const uint32_t n = cellsFor(bytes);
  uint64_t h = m_head.load(std::memory_order_relaxed);
  for (int spin = 0;;) {
    if (h & kClosed) {
      if (++spin >= kSpins) {
        stall(context);
        spin = 0;
      } else {
        cpuRelax();
      }
      h = m_head.load(std::memory_order_relaxed);
      continue;
    }
    if (m_head.compare_exchange_weak(h, h + n, std::memory_order_acq_rel,
                                     std::memory_order_relaxed))
      break;
  }
  // The consumer frees cells in ticket order: the last one free, all are (and it has read them).
  const uint64_t last = h + n - 1;
  const std::atomic<uint64_t>& seq = m_seq[last & m_mask];
  if (seq.load(std::memory_order_acquire) != last)
    waitFor([&] { return seq.load(std::memory_order_acquire) == last; }, stall, context);
  unsigned char* const at = cell(h);
  // The next record (most likely this thread's next) goes after this one: its cells' lines on
  // their way here for writing while the program runs meanwhile.
  for (uint32_t i = 0; i < 3; ++i) __builtin_prefetch(cell(h + n + i), 1, 3);
  __builtin_prefetch(&m_seq[(h + n + 2) & m_mask], 0, 3);
  return Reservation{at, h, n, static_cast<uint32_t>(bytes)};
}

const unsigned char* RecordRing::front(size_t* bytes) const {
  const uint64_t t = m_tail.load(std::memory_order_relaxed);
  if (m_seq[t & m_mask].load(std::memory_order_acquire) != t + 1) return nullptr;
  *bytes = m_length[t & m_mask];
  return cell(t);
}

void RecordRing::release() {
  const uint64_t t = m_tail.load(std::memory_order_relaxed);
  HETOPT_ASSERT(m_seq[t & m_mask].load(std::memory_order_relaxed) == t + 1);  // front() had it
  const uint32_t n = cellsFor(m_length[t & m_mask]);
  // In ticket order (reserve relies on it), each free for its ticket's next lap.
  for (uint32_t i = 0; i < n; ++i)
    m_seq[(t + i) & m_mask].store(t + i + m_mask + 1, std::memory_order_release);
  m_tail.store(t + n, std::memory_order_release);
  HETOPT_VALIDATE(*this, "record ring check failed");
}

size_t RecordRing::pop(void* out) {
  size_t len;
  const unsigned char* record = front(&len);
  if (!record) return 0;
  memcpy(out, record, len);
  release();
  return len;
}

void RecordRing::reset() {
  const uint64_t h = head();
  // Each cell free for the first ticket at or after h that maps to it.
  for (uint64_t i = 0; i <= m_mask; ++i)
    m_seq[(h + i) & m_mask].store(h + i, std::memory_order_relaxed);
  m_tail.store(h, std::memory_order_relaxed);
  m_head.store(h, std::memory_order_release);
  HETOPT_VALIDATE(*this, "record ring check failed");
}

bool RecordRing::validate(char* why, size_t whyBytes) const {
  const uint64_t t0 = m_tail.load(std::memory_order_acquire);
  const uint64_t cells = m_mask + 1;
  // R2 and R3, read before the head: producers only ever claim more.
  bool walking = true;  // along whole published records from the tail
  uint64_t next = t0;   // the next record's first cell while walking
  for (uint64_t t = t0; t < t0 + cells; ++t) {
    const uint64_t seq = m_seq[t & m_mask].load(std::memory_order_acquire);
    if (seq != t && seq != t + 1)
      return invalid(why, whyBytes, "ticket %llu: sequence word %llu (R2)",
                     static_cast<unsigned long long>(t), static_cast<unsigned long long>(seq));
    if (!walking) continue;
    if (t < next) {
      if (seq == t + 1)
        return invalid(why, whyBytes, "ticket %llu inside a record is published (R3)",
                       static_cast<unsigned long long>(t));
      continue;
    }
    if (seq != t + 1) {  // not published yet: what follows may still be written
      walking = false;
      continue;
    }
    const uint32_t bytes = m_length[t & m_mask];
    if (bytes == 0 || bytes > kMaxRecord)
      return invalid(why, whyBytes, "record at ticket %llu has %u bytes (R3)",
                     static_cast<unsigned long long>(t), bytes);
    next = t + cellsFor(bytes);
  }
  const uint64_t head = this->head();
  if (t0 > head)
    return invalid(why, whyBytes, "tail %llu is past the head %llu (R1)",
                   static_cast<unsigned long long>(t0), static_cast<unsigned long long>(head));
  return true;
}

}  // namespace hetopt::trace
