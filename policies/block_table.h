// SPDX-License-Identifier: MIT
/**
 * @file A fixed table of live memory blocks keyed by their start address, read without a lock.
 * Every free() in the process asks "is this one of ours?" (the direct allocator's blocks, the
 * blocks registered in place), so the question must cost a few loads: an open-addressing hash
 * table of start addresses, probed with acquire loads, behind a [lowest, highest) address filter.
 * The table never grows: insert() fails when full and the caller falls back to the system
 * allocator.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "common/check.h"

namespace hetopt::policies {

/// Writers (insert, erase) are serialised by the owner's lock; each publishes or retires one slot,
/// and a reader racing with them is asking about another address, since nobody frees a block that
/// is being made or freed. Retired slots (tombstones) are swept by rebuilding the table into its
/// twin array; readers notice through a sequence counter (odd while switching) and retry.
///
/// Invariants (validate() checks them under the owner's lock; at HETOPT_DEBUG_LEVEL 3 after every
/// insert and erase):
///   T1  m_live and m_tombstones count the current table's live and retired slots
///   T2  live blocks fill at most half the slots, tombstones at most a quarter (then the table is
///       rebuilt), so every probe meets an empty slot soon
///   T3  every live key is reached from its home slot without crossing an empty slot, once
///   T4  every live block is non-empty and inside the filter [m_low, m_high)
///   T5  the sequence counter is even: no rebuild is half done
///
/// `Value` is copied into the twin on a rebuild: keep it small (an index, an Allocation).
template <typename Value>
class BlockTable {
 public:
  /// Room for `maxLiveBlocks` blocks alive at once (the table has at least twice as many slots).
  explicit BlockTable(unsigned maxLiveBlocks) {
    size_t slots = 16;
    while (slots < 2 * static_cast<size_t>(maxLiveBlocks ? maxLiveBlocks : 1)) slots *= 2;
    m_mask = slots - 1;
    m_shift = 64 - static_cast<unsigned>(__builtin_ctzll(slots));
    m_maxLive = static_cast<unsigned>(slots / 2);
    m_tables[0] = new Slot[slots];
    m_tables[1] = new Slot[slots];
    m_table.store(m_tables[0], std::memory_order_release);
  }
  ~BlockTable() {
    delete[] m_tables[0];
    delete[] m_tables[1];
  }
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  // ---- readers: no lock ----------------------------------------------------------------------

  /// True when `p` is the start of a live block.
  bool owns(const void* p) const { return usableSize(p) != 0; }
  /// The block's bytes when `p` is the start of a live block, else 0.
  size_t usableSize(const void* ptr) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    if (p < m_low.load(std::memory_order_relaxed) || p >= m_high.load(std::memory_order_relaxed))
      return 0;
    return readConsistent([&](const Slot* t) -> size_t {
      const Slot* s = find(t, p);
      return s ? s->size.load(std::memory_order_relaxed) : 0;
    });
  }
  /// The start of the live block holding `ptr` (a transfer from an offset), else 0. A scan of
  /// the table: for OpenCL transfer calls, not for the malloc family.
  uintptr_t containing(const void* ptr) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    if (p < m_low.load(std::memory_order_relaxed) || p >= m_high.load(std::memory_order_relaxed))
      return 0;
    return readConsistent([&](const Slot* t) -> uintptr_t {
      for (size_t i = 0; i <= m_mask; ++i) {
        uintptr_t k = t[i].key.load(std::memory_order_acquire);
        if (k > kTombstone && p - k < t[i].size.load(std::memory_order_relaxed)) return k;
      }
      return 0;
    });
  }

  // ---- writers: under the owner's lock --------------------------------------------------------

  unsigned liveBlocks() const { return m_live; }
  /// fn(start, size, value) for every live block.
  template <typename Fn>
  void forEach(Fn fn) const {
    const Slot* t = m_table.load(std::memory_order_relaxed);
    for (size_t i = 0; i <= m_mask; ++i) {
      const uintptr_t k = t[i].key.load(std::memory_order_relaxed);
      if (k > kTombstone) fn(k, t[i].size.load(std::memory_order_relaxed), t[i].value);
    }
  }
  bool full() const { return m_live >= m_maxLive; }
  /// Publishes [start, start+size) with `value`; false when full.
  bool insert(const void* start, size_t size, const Value& value) {
    if (full() || size == 0) return false;
    const auto p = reinterpret_cast<uintptr_t>(start);
    Slot* t = m_table.load(std::memory_order_relaxed);
    size_t i = slotOf(p);
    while (t[i].key.load(std::memory_order_relaxed) > kTombstone) i = (i + 1) & m_mask;
    if (t[i].key.load(std::memory_order_relaxed) == kTombstone) --m_tombstones;
    t[i].value = value;
    t[i].size.store(size, std::memory_order_relaxed);
    // The filter widens before the key is visible, so a reader that finds the key passed it.
    if (p < m_low.load(std::memory_order_relaxed)) m_low.store(p, std::memory_order_relaxed);
    if (p + size > m_high.load(std::memory_order_relaxed))
      m_high.store(p + size, std::memory_order_relaxed);
    t[i].key.store(p, std::memory_order_release);
    ++m_live;
    HETOPT_VALIDATE(*this, "block table check failed");
    return true;
  }
  /// The value of the live block starting at `start`, or null.
  Value* valueOf(const void* start) {
    Slot* s = const_cast<Slot*>(
        find(m_table.load(std::memory_order_relaxed), reinterpret_cast<uintptr_t>(start)));
    return s ? &s->value : nullptr;
  }
  /// Retires the block starting at `start` (its value into *out); false when there is none.
  bool erase(const void* start, Value* out) {
    auto* s = const_cast<Slot*>(
        find(m_table.load(std::memory_order_relaxed), reinterpret_cast<uintptr_t>(start)));
    if (!s) return false;
    if (out) *out = s->value;
    s->key.store(kTombstone, std::memory_order_release);
    HETOPT_ASSERT(m_live > 0);
    --m_live;
    if (++m_tombstones > (m_mask + 1) / 4) rebuild();
    HETOPT_VALIDATE(*this, "block table check failed");
    return true;
  }

  /// Checks T1-T5 (under the owner's lock); false with the first broken one in `why`.
  bool validate(char* why = nullptr, size_t whyBytes = 0) const {
    auto broken = [&](const char* what, unsigned long long a, unsigned long long b) {
      if (why && whyBytes) snprintf(why, whyBytes, "%s (%llu, %llu)", what, a, b);
      return false;
    };
    if (m_sequence.load(std::memory_order_relaxed) & 1)
      return broken("rebuild half done (T5)", 0, 0);
    const Slot* t = m_table.load(std::memory_order_relaxed);
    const uintptr_t low = m_low.load(std::memory_order_relaxed);
    const uintptr_t high = m_high.load(std::memory_order_relaxed);
    size_t live = 0, tombstones = 0;
    for (size_t i = 0; i <= m_mask; ++i) {
      const uintptr_t k = t[i].key.load(std::memory_order_relaxed);
      if (k == kEmpty) continue;
      if (k == kTombstone) {
        ++tombstones;
        continue;
      }
      ++live;
      const size_t size = t[i].size.load(std::memory_order_relaxed);
      if (size == 0 || k < low || k + size > high)
        return broken("block outside the filter (T4)", k, size);
      for (size_t j = slotOf(k); j != i; j = (j + 1) & m_mask) {
        const uintptr_t w = t[j].key.load(std::memory_order_relaxed);
        if (w == kEmpty) return broken("key behind an empty slot (T3)", k, j);
        if (w == k) return broken("key in two slots (T3)", k, j);
      }
    }
    if (live != m_live || tombstones != m_tombstones)
      return broken("counts differ from the table (T1)", live, tombstones);
    if (live > m_maxLive || tombstones > (m_mask + 1) / 4)
      return broken("too full (T2)", live, tombstones);
    return true;
  }

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};  ///< 0: empty, 1: tombstone, else the block's address
    std::atomic<size_t> size{0};
    Value value{};
  };
  static constexpr uintptr_t kEmpty = 0, kTombstone = 1;

  size_t slotOf(uintptr_t key) const {
    return static_cast<size_t>((key >> 4) * 0x9E3779B97F4A7C15ull >> m_shift);  // Fibonacci hashing
  }
  const Slot* find(const Slot* table, uintptr_t key) const {
    for (size_t i = slotOf(key), n = 0; n <= m_mask; i = (i + 1) & m_mask, ++n) {
      uintptr_t k = table[i].key.load(std::memory_order_acquire);
      if (k == key) return &table[i];
      if (k == kEmpty) return nullptr;
    }
    return nullptr;
  }
  // Seqlock read: `fn` sees one table that no rebuild changed meanwhile.
  template <typename Fn>
  auto readConsistent(Fn fn) const {
    for (;;) {
      uint32_t seq = m_sequence.load(std::memory_order_acquire);
      if (HETOPT_UNLIKELY(seq & 1)) {
        cpuRelax();
        continue;
      }
      auto result = fn(m_table.load(std::memory_order_acquire));
      std::atomic_thread_fence(std::memory_order_acquire);
      if (HETOPT_LIKELY(m_sequence.load(std::memory_order_relaxed) == seq)) return result;
    }
  }
  void rebuild() {
    Slot* from = m_table.load(std::memory_order_relaxed);
    Slot* to = from == m_tables[0] ? m_tables[1] : m_tables[0];
    m_sequence.fetch_add(1, std::memory_order_acq_rel);  // odd: readers wait, then retry
    for (size_t i = 0; i <= m_mask; ++i) to[i].key.store(kEmpty, std::memory_order_relaxed);
    for (size_t i = 0; i <= m_mask; ++i) {
      uintptr_t k = from[i].key.load(std::memory_order_relaxed);
      if (k <= kTombstone) continue;
      size_t j = slotOf(k);
      while (to[j].key.load(std::memory_order_relaxed) != kEmpty) j = (j + 1) & m_mask;
      to[j].value = from[i].value;
      to[j].size.store(from[i].size.load(std::memory_order_relaxed), std::memory_order_relaxed);
      to[j].key.store(k, std::memory_order_relaxed);
    }
    m_table.store(to, std::memory_order_release);
    m_tombstones = 0;
    m_sequence.fetch_add(1, std::memory_order_release);
  }

  Slot* m_tables[2] = {};
  std::atomic<Slot*> m_table{nullptr};  ///< one of m_tables; the other is the rebuild's target
  size_t m_mask = 0;
  unsigned m_shift = 64;
  unsigned m_maxLive = 0;
  unsigned m_live = 0;
  size_t m_tombstones = 0;
  std::atomic<uint32_t> m_sequence{0};
  std::atomic<uintptr_t> m_low{UINTPTR_MAX}, m_high{0};
};

}  // namespace hetopt::policies
