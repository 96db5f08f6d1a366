// SPDX-License-Identifier: MIT
/** @file Direct (pool-less) allocation with a policy; see direct.h.
 * The policy's lock around allocate and release, the table lock around the block table. */
#include "policies/direct.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "policies/os_memory.h"

namespace hetopt::policies {

DirectAllocator::DirectAllocator(unsigned maxLiveBlocks) : m_blocks(maxLiveBlocks) {}

DirectAllocator::~DirectAllocator() = default;

void DirectAllocator::setPolicy(AllocationPolicy* policy) {
  std::lock_guard<std::mutex> lock(m_policyLock);
  m_policy = policy;
}

bool DirectAllocator::owns(const void* ptr) const { return m_blocks.owns(ptr); }

bool DirectAllocator::contains(const void* ptr) const { return m_blocks.containing(ptr) != 0; }

size_t DirectAllocator::usableSize(const void* ptr) const { return m_blocks.usableSize(ptr); }

void DirectAllocator::failLocked(const char* why) {
  if (m_stats.failures++ == 0)
    snprintf(m_stats.firstFailure, sizeof m_stats.firstFailure, "%s", why);
}

void* DirectAllocator::allocate(size_t size, size_t alignment, bool zero) {
  if (m_child.load(std::memory_order_relaxed)) return nullptr;
  size_t align = alignment > kMinAlignment ? alignment : kMinAlignment;
  // Allocations one at a time: the live blocks counted here can only go down until the insert.
  std::unique_lock<std::mutex> policyLock(m_policyLock);
  const char* refused = !m_policy                ? "no policy"
                        : align > os::pageSize() ? "alignment above a page"
                        : size > SIZE_MAX / 2    ? "size too large"  // no wrap when rounding
                                                 : nullptr;
  {
    std::lock_guard<std::mutex> table(m_tableLock);
    if (!refused && m_blocks.full()) refused = "too many live blocks";
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
    m_blocks.insert(a.ptr, a.size, a);
    ++m_stats.allocations;
    ++m_stats.liveBlocks;
    m_stats.liveBytes += a.size;
    m_stats.peakLiveBytes = std::max(m_stats.peakLiveBytes, m_stats.liveBytes);
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
    // Retired before the policy frees anything: its own free() of the pages must not find it.
    if (!m_blocks.erase(ptr, &a)) return;
    --m_stats.liveBlocks;
    m_stats.liveBytes -= a.size;
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

void DirectAllocator::copyForChild(ForkCopies& copies) {
  // Every block comes from the one policy: how fork() treats the first tells for all (asked once,
  // at the first fork with blocks alive).
  m_blocks.forEach([&](uintptr_t start, size_t size, const Allocation&) {
    if (!m_inheritanceAsked) {
      m_inheritance = os::forkInheritance(reinterpret_cast<void*>(start));
      m_inheritanceAsked = true;
    }
    if (!os::needsCopyForChild(m_inheritance)) return;
    if (void* copy = copies.add(reinterpret_cast<void*>(start), size))
      memcpy(copy, reinterpret_cast<void*>(start), size);
  });
}

DirectStats DirectAllocator::stats() const {
  std::lock_guard<std::mutex> lock(m_tableLock);  // unlocked in a forked child: the fork protocol
  return m_stats;
}

}  // namespace hetopt::policies
