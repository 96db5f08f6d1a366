// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode's account of one run for its run record (contracts/run_record.h): every
 * host<->device transfer the trace would count (trace::isTransfer) as pinned, gone ahead pageable
 * (a block adopted for pinning, not pinned yet) or other memory, and per plan site the transfers
 * from the memory hetopt served for it. Counting costs the program a hash probe per block served
 * or freed, no allocation after construction.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "contracts/run_record.h"
#include "policies/block_table.h"
#include "policies/pool.h"

namespace hetopt::shim {

/// Pool and direct blocks do not know their site: a policies::BlockTable (kMaxBlocks live) maps
/// each block served to its site while it lives, so serving and freeing a block cost a hash probe;
/// a block beyond the table is still counted in the totals, under no site. A transfer from a
/// block's start is a probe too; only one from inside a block scans the table (the table's writers
/// and these lookups share a spin lock of the pool's kind: constant-initialised, never held across
/// a call).
class SiteLedger {
 public:
  static constexpr unsigned kNoSite = ~0u;
  static constexpr unsigned kMaxBlocks = 4096;
  enum class Outcome : uint8_t { Pinned, Pageable, Other };

  explicit SiteLedger(size_t sites);

  /// A pool or direct block of `bytes` was handed out for plan site `site`.
  void served(const void* block, size_t bytes, unsigned site);
  /// It goes back (free, or realloc moved it): forgotten.
  void released(const void* block);
  /// The site of the served block holding `host`, or kNoSite.
  unsigned siteOf(const void* host) const;
  /// A transfer of `bytes` (to the device: `h2d`) with its outcome, from memory of `site`
  /// (kNoSite: none).
  void count(unsigned site, uint64_t bytes, Outcome outcome, bool h2d);

  struct Directions {
    uint64_t h2d = 0, h2dBytes = 0, d2h = 0, d2hBytes = 0;
  };
  /// Every transfer counted, by direction (the record keeps outcomes only; the JSON both).
  Directions directions() const;

  /// Fills the record's totals and its sites (keys from `plan`, in its order).
  void fill(const Plan& plan, RunRecord* record) const;

  /// The fork protocol (shim/core/lifecycle.cpp): held across fork() so the child's table is whole.
  void lockForFork() { m_lock.lock(); }
  void unlockAfterFork() { m_lock.unlock(); }

 private:
  struct Counts {
    std::atomic<uint64_t> transfers{0}, bytes{0}, pinned{0}, pageable{0};
  };
  struct Total {
    std::atomic<uint64_t> transfers{0}, bytes{0};
  };

  mutable policies::PoolLock m_lock;
  mutable policies::BlockTable<unsigned> m_blocks{
      kMaxBlocks};  ///< served block -> its site (under m_lock)
  size_t m_numSites;
  std::unique_ptr<Counts[]> m_sites;
  Total m_totals[3];      ///< by Outcome
  Total m_directions[2];  ///< [0] to the device, [1] from it
};

}  // namespace hetopt::shim
