// SPDX-License-Identifier: MIT
/** @file The lock-free block filter; see address_set.h (invariants A1-A4).
 * Probing, inserting and erasing under the owner's lock, rebuilding into a new table. */
#include "trace/address_set.h"

#include <cstdarg>
#include <cstdio>

#include "common/check.h"

namespace hetopt::trace {

namespace {
constexpr uint64_t kEmpty = 0, kTombstone = 1;
inline size_t slotOf(uint64_t p, size_t mask) {
  return static_cast<size_t>(((p >> 4) * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

}  // namespace

AddressSet::AddressSet() { m_table.store(makeTable(1024), std::memory_order_release); }

AddressSet::Table* AddressSet::makeTable(size_t capacity) {
  // Never freed: a lock-free reader may still be probing an old table (few, geometric sizes).
  auto* t = new Table;
  t->mask = capacity - 1;
  t->slots = new std::atomic<uint64_t>[capacity];
  for (size_t i = 0; i < capacity; ++i) t->slots[i].store(kEmpty, std::memory_order_relaxed);
  return t;
}

bool AddressSet::mayContain(uint64_t p) const {
  const Table* t = m_table.load(std::memory_order_acquire);
  for (size_t i = slotOf(p, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
    uint64_t v = t->slots[i].load(std::memory_order_acquire);
    if (v == p) return true;
    if (v == kEmpty) return false;
  }
  return true;  // full table of other keys: let the caller check under the lock
}

void AddressSet::rebuild(size_t capacity) {
  Table* old = m_table.load(std::memory_order_relaxed);
  Table* t = makeTable(capacity);
  m_used = 0;
  for (size_t i = 0; i <= old->mask; ++i) {
    uint64_t v = old->slots[i].load(std::memory_order_relaxed);
    if (v == kEmpty || v == kTombstone) continue;
    size_t j = slotOf(v, t->mask);
    while (t->slots[j].load(std::memory_order_relaxed) != kEmpty) j = (j + 1) & t->mask;
    t->slots[j].store(v, std::memory_order_relaxed);
    ++m_used;
  }
  m_table.store(t, std::memory_order_release);
}

void AddressSet::insert(uint64_t p) {
  if (p <= kTombstone) return;
  Table* t = m_table.load(std::memory_order_relaxed);
  if ((m_used + 1) * 4 > (t->mask + 1) * 3) {  // A4
    size_t cap = t->mask + 1;
    while ((m_live + 1) * 4 > cap) cap *= 2;
    rebuild(cap * 2);
    t = m_table.load(std::memory_order_relaxed);
  }
  size_t reuse = SIZE_MAX;
  size_t i = slotOf(p, t->mask);
  for (;; i = (i + 1) & t->mask) {
    uint64_t v = t->slots[i].load(std::memory_order_relaxed);
    if (v == p) return;  // A1: once
    if (v == kTombstone && reuse == SIZE_MAX) reuse = i;
    if (v == kEmpty) break;
  }
  if (reuse != SIZE_MAX) {
    i = reuse;
  } else {
    ++m_used;
  }
  t->slots[i].store(p, std::memory_order_release);
  ++m_live;
  HETOPT_VALIDATE(*this, "address set check failed");
}

void AddressSet::erase(uint64_t p) {
  Table* t = m_table.load(std::memory_order_relaxed);
  for (size_t i = slotOf(p, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
    uint64_t v = t->slots[i].load(std::memory_order_relaxed);
    if (v == kEmpty) return;
    if (v == p) {
      t->slots[i].store(kTombstone, std::memory_order_release);
      HETOPT_ASSERT(m_live > 0);
      --m_live;
      HETOPT_VALIDATE(*this, "address set check failed");
      return;
    }
  }
}

bool AddressSet::validate(char* why, size_t whyBytes) const {
  const Table* t = m_table.load(std::memory_order_relaxed);
  const size_t slots = t->mask + 1;
  if (slots & t->mask) return invalid(why, whyBytes, "%zu slots: not a power of two", slots);
  size_t live = 0, tombstones = 0;
  for (size_t i = 0; i < slots; ++i) {
    const uint64_t v = t->slots[i].load(std::memory_order_relaxed);
    if (v == kEmpty) continue;
    if (v == kTombstone) {
      ++tombstones;
      continue;
    }
    ++live;
    // A1 and A2: the probe from the key's home slot meets it here first, and no empty slot before.
    for (size_t j = slotOf(v, t->mask);; j = (j + 1) & t->mask) {
      const uint64_t w = t->slots[j].load(std::memory_order_relaxed);
      if (j == i) break;
      if (w == kEmpty)
        return invalid(why, whyBytes, "key %#llx in slot %zu is behind an empty slot %zu (A2)",
                       static_cast<unsigned long long>(v), i, j);
      if (w == v)
        return invalid(why, whyBytes, "key %#llx in slots %zu and %zu (A1)",
                       static_cast<unsigned long long>(v), j, i);
    }
  }
  if (live != m_live || live + tombstones != m_used)
    return invalid(why, whyBytes, "counted %zu live, %zu used; the table has %zu and %zu (A3)",
                   m_live, m_used, live, live + tombstones);
  if (m_used * 4 > slots * 3)
    return invalid(why, whyBytes, "%zu of %zu slots used (A4)", m_used, slots);
  return true;
}

}  // namespace hetopt::trace
