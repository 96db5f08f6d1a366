// SPDX-License-Identifier: MIT
/**
 * @file The naive allocator beside the pool (`hetopt run --no-pool`): every block is made by an
 * AllocationPolicy itself on the calling thread and released with it, the naive "pin everything
 * directly" scheme that pools beat by 5-40% where allocation repeats. It is kept as a real mode
 * so that the comparison is measured on this machine, not quoted. Ownership lookup (every free()
 * in the process asks owns()) takes no lock: a BlockTable (block_table.h) of the live blocks.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "policies/block_table.h"
#include "policies/fork_copies.h"
#include "policies/os_memory.h"
#include "policies/policy.h"

namespace hetopt::policies {

struct DirectStats {
  uint64_t allocations = 0;  ///< blocks made by the policy
  uint64_t failures = 0;     ///< allocate()/reallocate() calls that got nothing
  uint64_t liveBlocks = 0;
  uint64_t liveBytes = 0;
  uint64_t peakLiveBytes = 0;
  char firstFailure[160] = {};  ///< why the first failure failed
};

/// C library semantics as for the pool (pool.h): pointers at least 16-aligned (larger alignments
/// up to a page; the pinning policies return page-aligned memory and anything less is refused),
/// zeroed for calloc, usableSize() >= the size asked for, reallocate() keeps the contents and
/// returns null (block unchanged) when it cannot, so the caller moves the block elsewhere.
///
/// The block table is edited under the table lock. A second lock serialises the policy (it is not
/// thread-safe by itself) and is held across its OpenCL calls; the table lock never is. The table
/// is fixed at construction: when it is full, allocate() fails and the caller falls back to malloc.
class DirectAllocator {
 public:
  static constexpr size_t kMinAlignment = 16;

  /// Room for `maxLiveBlocks` blocks alive at once (the table has twice as many slots).
  explicit DirectAllocator(unsigned maxLiveBlocks);
  ~DirectAllocator();
  DirectAllocator(const DirectAllocator&) = delete;
  DirectAllocator& operator=(const DirectAllocator&) = delete;

  /// The policy that makes and releases blocks; not owned. Until set, allocate() fails.
  void setPolicy(AllocationPolicy* policy);

  /// A block of at least `size` bytes aligned to `alignment` (0: 16), zeroed when asked; null when
  /// the policy fails, the alignment is above a page or the table is full.
  void* allocate(size_t size, size_t alignment, bool zero);
  /// True when `ptr` is the start of a live block. No lock.
  bool owns(const void* ptr) const;
  /// True when `ptr` lies inside a live block (transfers from an offset). No lock; a scan of the
  /// table, so only for OpenCL transfer calls, not for the malloc family.
  bool contains(const void* ptr) const;
  /// The block's usable bytes (>= the size asked). No lock. Pre: owns(ptr).
  size_t usableSize(const void* ptr) const;
  /// Releases the block with the policy. Pre: owns(ptr).
  void deallocate(void* ptr);
  /// In place when `size` fits the block, else a new block with the contents copied and `ptr`
  /// released; null when no new block could be made (`ptr` unchanged). Pre: owns(ptr), size > 0.
  void* reallocate(void* ptr, size_t size);
  /// In a forked child: the policy's OpenCL context is not usable there, so blocks are never
  /// released again (they stay valid) and nothing new is made.
  void forkChild();
  /// Between lockForFork() and fork(): a private copy of every live block for the child, when
  /// fork() would share the policy's memory or leave it out (fork_copies.h).
  void copyForChild(ForkCopies& copies);
  /// The fork protocol (shim/core/lifecycle.cpp): the table lock is held across fork(), so that the
  /// child's table is whole (a rebuild half done would make every lookup there wait forever) and
  /// its stats() can lock. Not the policy's lock: it is held across OpenCL calls that may wait for
  /// the thread that forks, and the child never takes it.
  void lockForFork() { m_tableLock.lock(); }
  void unlockAfterFork() { m_tableLock.unlock(); }

  DirectStats stats() const;

 private:
  void failLocked(const char* why);

  std::mutex m_policyLock;               ///< one policy call at a time; taken before m_tableLock
  mutable std::mutex m_tableLock;        ///< edits of the table, and m_stats
  AllocationPolicy* m_policy = nullptr;  ///< under m_policyLock
  BlockTable<Allocation> m_blocks;       ///< what the policy's release() needs, per live block
  std::atomic<bool> m_child{false};
  os::ForkInheritance m_inheritance = os::ForkInheritance::Unknown;  ///< of the policy's memory
  bool m_inheritanceAsked = false;
  DirectStats m_stats;
};

}  // namespace hetopt::policies
