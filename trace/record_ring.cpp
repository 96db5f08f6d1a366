// SPDX-License-Identifier: MIT
/** @file The record ring; see record_ring.h. */
#include "trace/record_ring.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace hetopt::trace {

namespace {
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
constexpr int kSpins = 64;  ///< busy tries before the stall function is called
}  // namespace

RecordRing::RecordRing(size_t slots) : m_mask(slots - 1) {
  m_slots = static_cast<Slot*>(::operator new(slots * sizeof(Slot), std::align_val_t{kSlotBytes}));
  for (size_t i = 0; i < slots; ++i) {
    new (&m_slots[i]) Slot;
    m_slots[i].seq.store(i, std::memory_order_relaxed);
  }
}

RecordRing::~RecordRing() { ::operator delete(m_slots, std::align_val_t{kSlotBytes}); }

RecordRing::Reservation RecordRing::reserve(size_t bytes, Stall stall, void* context) {
  const uint32_t n = slotsFor(bytes);
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
    if (m_head.compare_exchange_weak(h, h + n, std::memory_order_acq_rel, std::memory_order_relaxed))
      return Reservation{h, n, static_cast<uint32_t>(bytes)};
  }
}

void RecordRing::commit(const Reservation& r, const void* data, Stall stall, void* context) {
  const auto* src = static_cast<const unsigned char*>(data);
  size_t left = r.bytes;
  for (uint32_t i = 0; i < r.slots; ++i) {
    const uint64_t ticket = r.ticket + i;
    Slot& s = m_slots[ticket & m_mask];
    for (int spin = 0; s.seq.load(std::memory_order_acquire) != ticket;) {
      if (++spin >= kSpins) {
        stall(context);
        spin = 0;
      } else {
        cpuRelax();
      }
    }
    size_t at = 0;
    if (i == 0) {
      const uint32_t len = r.bytes;
      memcpy(s.data, &len, 4);
      at = 4;
    }
    const size_t n = std::min(left, kPayload - at);
    memcpy(s.data + at, src, n);
    src += n;
    left -= n;
    s.seq.store(ticket + 1, std::memory_order_release);
  }
}

size_t RecordRing::pop(void* out) {
  const uint64_t t = m_tail.load(std::memory_order_relaxed);
  const Slot& first = m_slots[t & m_mask];
  if (first.seq.load(std::memory_order_acquire) != t + 1) return 0;
  uint32_t len;
  memcpy(&len, first.data, 4);
  const uint32_t n = slotsFor(len);
  for (uint32_t i = 1; i < n; ++i)
    if (m_slots[(t + i) & m_mask].seq.load(std::memory_order_acquire) != t + i + 1) return 0;
  auto* dst = static_cast<unsigned char*>(out);
  size_t left = len;
  for (uint32_t i = 0; i < n; ++i) {
    Slot& s = m_slots[(t + i) & m_mask];
    const size_t at = i == 0 ? 4 : 0;
    const size_t k = std::min(left, kPayload - at);
    memcpy(dst, s.data + at, k);
    dst += k;
    left -= k;
    s.seq.store(t + i + m_mask + 1, std::memory_order_release);  // free for the next lap
  }
  m_tail.store(t + n, std::memory_order_release);
  return len;
}

void RecordRing::reset() {
  const uint64_t h = head();
  // Each slot free for the first ticket at or after h that maps to it.
  for (uint64_t i = 0; i <= m_mask; ++i) m_slots[(h + i) & m_mask].seq.store(h + i, std::memory_order_relaxed);
  m_tail.store(h, std::memory_order_relaxed);
  m_head.store(h, std::memory_order_release);
}

}  // namespace hetopt::trace
