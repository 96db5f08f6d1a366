// SPDX-License-Identifier: MIT
/** @file Direct (pool-less) allocation with a policy; see direct.h. */
#include "policies/direct.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "policies/os_memory.h"

namespace hetopt::policies {

DirectAllocator::DirectAllocator(unsigned maxLiveBlocks) {
  size_t slots = 16;
  while (slots < 2 * static_cast<size_t>(maxLiveBlocks ? maxLiveBlocks : 1)) slots *= 2;
  m_mask = slots - 1;
  m_shift = 64 - static_cast<unsigned>(__builtin_ctzll(slots));
  // Live blocks fill at most half the table and tombstones a quarter (then it is rebuilt), so a
  // probe always meets an empty slot soon.
  m_maxLive = static_cast<unsigned>(slots / 2);
  m_tables[0] = new Slot[slots];
  m_tables[1] = new Slot[slots];
  m_table.store(m_tables[0], std::memory_order_release);
}

DirectAllocator::~DirectAllocator() {
  delete[] m_tables[0];
  delete[] m_tables[1];
}

void DirectAllocator::setPolicy(AllocationPolicy* policy) {
  std::lock_guard<std::mutex> lock(m_policyLock);
  m_policy = policy;
}

size_t DirectAllocator::slotOf(uintptr_t key) const {
  return static_cast<size_t>((key >> 4) * 0x9E3779B97F4A7C15ull >> m_shift);  // Fibonacci hashing
}

// Seqlock read: `fn` sees one table that no rebuild changed meanwhile.
template <typename Fn>
auto DirectAllocator::readConsistent(Fn fn) const {
  for (;;) {
    uint32_t seq = m_sequence.load(std::memory_order_acquire);
    if (seq & 1) [[unlikely]] {
      __builtin_ia32_pause();
      continue;
    }
    auto result = fn(m_table.load(std::memory_order_acquire));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (m_sequence.load(std::memory_order_relaxed) == seq) [[likely]]
      return result;
  }
}

const DirectAllocator::Slot* DirectAllocator::findLocked(const Slot* table, uintptr_t key) const {
  for (size_t i = slotOf(key), n = 0; n <= m_mask; i = (i + 1) & m_mask, ++n) {
    uintptr_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key) return &table[i];
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

bool DirectAllocator::owns(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  if (p < m_low.load(std::memory_order_relaxed) || p >= m_high.load(std::memory_order_relaxed))
    return false;
  return readConsistent([&](const Slot* t) { return findLocked(t, p) != nullptr; });
}

bool DirectAllocator::contains(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  if (p < m_low.load(std::memory_order_relaxed) || p >= m_high.load(std::memory_order_relaxed))
    return false;
  return readConsistent([&](const Slot* t) {
    for (size_t i = 0; i <= m_mask; ++i) {
      uintptr_t k = t[i].key.load(std::memory_order_acquire);
      if (k > kTombstone && p - k < t[i].size.load(std::memory_order_relaxed)) return true;
    }
    return false;
  });
}

size_t DirectAllocator::usableSize(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  return readConsistent([&](const Slot* t) -> size_t {
    const Slot* s = findLocked(t, p);
    return s ? s->size.load(std::memory_order_relaxed) : 0;
  });
}

void DirectAllocator::failLocked(const char* why) {
  if (m_stats.failures++ == 0) snprintf(m_stats.firstFailure, sizeof m_stats.firstFailure, "%s", why);
}

void DirectAllocator::insertLocked(const Allocation& a) {
  const auto p = reinterpret_cast<uintptr_t>(a.ptr);
  Slot* t = m_table.load(std::memory_order_relaxed);
  size_t i = slotOf(p);
  while (t[i].key.load(std::memory_order_relaxed) > kTombstone) i = (i + 1) & m_mask;
  if (t[i].key.load(std::memory_order_relaxed) == kTombstone) --m_tombstones;
  t[i].allocation = a;
  t[i].size.store(a.size, std::memory_order_relaxed);
  // The filter widens before the key is visible, so a reader that finds the key passed it.
  if (p < m_low.load(std::memory_order_relaxed)) m_low.store(p, std::memory_order_relaxed);
  if (p + a.size > m_high.load(std::memory_order_relaxed))
    m_high.store(p + a.size, std::memory_order_relaxed);
  t[i].key.store(p, std::memory_order_release);
  ++m_stats.allocations;
  ++m_stats.liveBlocks;
  m_stats.liveBytes += a.size;
  if (m_stats.liveBytes > m_stats.peakLiveBytes) m_stats.peakLiveBytes = m_stats.liveBytes;
}

void DirectAllocator::rebuildLocked() {
  Slot* from = m_table.load(std::memory_order_relaxed);
  Slot* to = from == m_tables[0] ? m_tables[1] : m_tables[0];
  m_sequence.fetch_add(1, std::memory_order_acq_rel);  // odd: readers wait, then retry
  for (size_t i = 0; i <= m_mask; ++i) to[i].key.store(kEmpty, std::memory_order_relaxed);
  for (size_t i = 0; i <= m_mask; ++i) {
    uintptr_t k = from[i].key.load(std::memory_order_relaxed);
    if (k <= kTombstone) continue;
    size_t j = slotOf(k);
    while (to[j].key.load(std::memory_order_relaxed) != kEmpty) j = (j + 1) & m_mask;
    to[j].allocation = from[i].allocation;
    to[j].size.store(from[i].size.load(std::memory_order_relaxed), std::memory_order_relaxed);
    to[j].key.store(k, std::memory_order_relaxed);
  }
  m_table.store(to, std::memory_order_release);
  m_tombstones = 0;
  m_sequence.fetch_add(1, std::memory_order_release);
}

void* DirectAllocator::allocate(size_t size, size_t alignment, bool zero) {
  if (m_child.load(std::memory_order_relaxed)) return nullptr;
  size_t align = alignment > kMinAlignment ? alignment : kMinAlignment;
  // Allocations one at a time: the live blocks counted here can only go down until the insert.
  std::unique_lock<std::mutex> policyLock(m_policyLock);
  const char* refused = !m_policy                 ? "no policy"
                        : align > os::pageSize()  ? "alignment above a page"
                        : size > SIZE_MAX / 2     ? "size too large"  // no wrap when rounding
                                                  : nullptr;
  {
    std::lock_guard<std::mutex> table(m_tableLock);
    if (!refused && m_stats.liveBlocks >= m_maxLive) refused = "too many live blocks";
    if (refused) return failLocked(refused), nullptr;
  }
  Allocation a;
  // Whole 16-byte units, as malloc's usable sizes are.
  PolicyStatus st = m_policy->allocate((size + kMinAlignment - 1) & ~(kMinAlignment - 1), &a);
  const bool misaligned = st && reinterpret_cast<uintptr_t>(a.ptr) % align != 0;
  if (misaligned) m_policy->release(&a);
  {
    std::lock_guard<std::mutex> table(m_tableLock);
    if (!st) return failLocked(st.reason), nullptr;
    if (misaligned) return failLocked("policy memory less aligned than asked"), nullptr;
    insertLocked(a);
  }
  policyLock.unlock();
  if (zero) memset(a.ptr, 0, size);  // mapped or locked memory is not promised to be zero
  return a.ptr;
}

void DirectAllocator::deallocate(void* ptr) {
  if (m_child.load(std::memory_order_relaxed)) return;  // left valid: see forkChild()
  Allocation a;
  {
    std::lock_guard<std::mutex> table(m_tableLock);
    auto* s = const_cast<Slot*>(findLocked(m_table.load(std::memory_order_relaxed),
                                           reinterpret_cast<uintptr_t>(ptr)));
    if (!s) return;
    a = s->allocation;
    // Retired before the policy frees anything: its own free() of the pages must not find it.
    s->key.store(kTombstone, std::memory_order_release);
    --m_stats.liveBlocks;
    m_stats.liveBytes -= a.size;
    if (++m_tombstones > (m_mask + 1) / 4) rebuildLocked();
  }
  std::lock_guard<std::mutex> policyLock(m_policyLock);
  m_policy->release(&a);
}

void* DirectAllocator::reallocate(void* ptr, size_t size) {
  size_t old = usableSize(ptr);
  if (size <= old) return ptr;  // shrinking keeps the pinned block (C allows the same pointer)
  void* moved = allocate(size, 0, false);
  if (!moved) return nullptr;
  memcpy(moved, ptr, old);
  deallocate(ptr);
  return moved;
}

void DirectAllocator::forkChild() { m_child.store(true, std::memory_order_relaxed); }

DirectStats DirectAllocator::stats() const {
  std::lock_guard<std::mutex> lock(m_tableLock);  // unlocked in a forked child: the fork protocol
  return m_stats;
}

}  // namespace hetopt::policies
