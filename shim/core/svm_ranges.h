// SPDX-License-Identifier: MIT
/**
 * @file The SVM and USM allocations the program has alive (clSVMAlloc, clHostMemAllocINTEL, ...):
 * device memory to the OpenCL API, so a copy to or from them is no host<->device transfer
 * (trace::isTransfer). The trace knows them as Svm objects; optimize mode asks this table. A
 * program without SVM pays one relaxed load per transfer (contains() on an empty table).
 */
#pragma once
#include <atomic>
#include <cstdint>

namespace hetopt::shim {

/// Lock-free and fixed (kMaxRanges): a slot is claimed by a compare-exchange of its start and
/// retired by storing its end and then its start as 0, so a fork() never finds a lock held and a
/// reader sees a range whole or not at all. A program that has more than kMaxRanges alive at once
/// gets the rest counted as host memory.
class SvmRanges {
 public:
  static constexpr unsigned kMaxRanges = 256;

  /// [start, start+bytes) was just allocated; false when the table is full.
  bool add(uint64_t start, uint64_t bytes) {
    if (!start || !bytes) return false;
    for (Slot& s : m_slots) {
      uint64_t empty = 0;
      if (s.start.load(std::memory_order_relaxed) != 0 ||
          !s.start.compare_exchange_strong(empty, start, std::memory_order_acq_rel))
        continue;
      s.end.store(start + bytes, std::memory_order_release);
      m_live.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    return false;
  }
  /// The allocation starting at `start` is about to be freed.
  void remove(uint64_t start) {
    if (!start || m_live.load(std::memory_order_relaxed) == 0) return;
    for (Slot& s : m_slots) {
      if (s.start.load(std::memory_order_acquire) != start) continue;
      s.end.store(0, std::memory_order_release);  // first: a reader of the old start finds no end
      s.start.store(0, std::memory_order_release);
      m_live.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
  /// Whether `p` lies in a live allocation.
  bool contains(uint64_t p) const {
    if (m_live.load(std::memory_order_relaxed) == 0) return false;
    for (const Slot& s : m_slots) {
      const uint64_t start = s.start.load(std::memory_order_acquire);
      if (!start || p < start) continue;
      if (p < s.end.load(std::memory_order_acquire)) return true;
    }
    return false;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> start{0}, end{0};  ///< start 0: free; end 0: being claimed or retired
  };
  Slot m_slots[kMaxRanges];
  std::atomic<unsigned> m_live{0};
};

}  // namespace hetopt::shim
