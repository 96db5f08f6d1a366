// SPDX-License-Identifier: MIT
/**
 * @file The user-space allocator over pre-allocated pinned memory. Pinned memory is expensive to
 * make (tens of ms per 64 MiB on NVIDIA) but transfers at full speed at any offset inside a pinned
 * block, so the shim asks a policy for a few large regions once, off the critical path, and serves
 * candidate allocations from them with this allocator. It runs inside the malloc path of other
 * people's processes, so it never allocates: every piece of metadata lives in the managed regions
 * themselves. Exhaustion is never fatal: the functions return null and the caller falls back.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/compiler.h"

namespace hetopt::policies {

/// A small test-and-test-and-set lock with a sched_yield fallback. Not std::mutex because this one
/// is constant-initialised, trivially destructible (the shim's free() may run after static
/// destructors) and never allocates; pool critical sections are short and bounded, so spinning is
/// cheaper than a futex sleep, and yielding after a while keeps a preempted holder from being
/// starved on an oversubscribed machine.
class PoolLock {
 public:
  constexpr PoolLock() = default;
  void lock() noexcept {
    if (HETOPT_LIKELY(!m_locked.exchange(true, std::memory_order_acquire))) return;
    lockContended();
  }
  void unlock() noexcept { m_locked.store(false, std::memory_order_release); }

 private:
  void lockContended() noexcept;
  std::atomic<bool> m_locked{false};
};

/// What the pool holds now. All byte counts are of region memory, chunk headers included, so that
/// capacityBytes == inUseBytes + freeBytes + kRegionOverhead * regions always holds.
struct PoolStats {
  size_t capacityBytes = 0;      ///< region bytes managed (after trimming each region to 16 bytes)
  size_t inUseBytes = 0;         ///< bytes of chunks handed out
  size_t peakInUseBytes = 0;     ///< the most inUseBytes has been
  size_t freeBytes = 0;          ///< bytes of free chunks
  size_t largestFreeBlock = 0;   ///< the largest allocate(n) that can succeed now (16-aligned)
  size_t freeChunks = 0;         ///< free chunks in the tree
  size_t liveBlocks = 0;         ///< blocks allocated and not yet deallocated
  size_t failedAllocations = 0;  ///< allocate()/reallocate() calls that found no room
  unsigned regions = 0;
};

/**
 * Best-fit allocator over caller-provided regions: best fit over an intrusive red-black tree of
 * free chunks keyed by (size, address), boundary tags for O(1) coalescing with both neighbours on
 * every free. All operations are O(log n) in the number of free chunks.
 *
 * Layout: each region is a sequence of chunks, each starting with a 16-byte ChunkHeader, ending
 * with a 16-byte fence header (size 0, in use) so that walks and coalescing stop at the end; the
 * payload follows the header directly, so every payload is as aligned as its chunk. Larger
 * alignments are made by splitting a free leading chunk off (no padding inside a block).
 *
 * No allocation: chunk headers and tree links live inside the regions, the region table is a
 * fixed array in the object, and the object is constant-initialised. A static `constinit
 * PinnedPool` works before any constructor ran and after every destructor ran, and an empty pool
 * simply finds no free chunk (allocate() returns null): no "initialised?" test anywhere. The pool
 * makes no OpenCL, mlock or mmap call: the caller brings the memory (addRegion) and keeps it alive
 * for as long as the pool serves from it.
 *
 * C library semantics the shim builds on (malloc, free, calloc, realloc, posix_memalign,
 * aligned_alloc, malloc_usable_size): every pointer is at least kMinAlignment (16, malloc's)
 * aligned; allocate(0) returns a unique pointer; usableSize() >= the size asked for and all of it
 * may be written; allocateZeroed() zeroes; reallocate() keeps the contents and returns null,
 * leaving the block untouched, when the pool cannot hold the new size, so that the shim moves the
 * block to another pool or to the system allocator (copying usableSize() bytes at most) and
 * deallocates it here.
 *
 * Thread safety: one lock per pool around the tree and tag updates (a few hundred instructions, no
 * syscalls, no allocation, no touching of payload bytes; calloc's memset and realloc's copy run
 * outside it). owns() and usableSize() take no lock, so the shim's free() path can route foreign
 * pointers away at the cost of a range check.
 */
class PinnedPool {
 public:
  static constexpr size_t kMinAlignment = 16;    ///< alignof(max_align_t): what malloc gives
  static constexpr size_t kHeaderBytes = 16;     ///< per block
  static constexpr size_t kRegionOverhead = 16;  ///< the fence at each region's end
  static constexpr unsigned kMaxRegions = 16;    ///< the table is fixed: no allocation
  static constexpr size_t kMaxAlignment = size_t{1} << 30;  ///< larger ones are refused (null)
  static constexpr size_t kMinChunkBytes = 48;  ///< header + the tree links of a free chunk

  constexpr PinnedPool() = default;
  PinnedPool(const PinnedPool&) = delete;  // free chunks point at each other and into the object
  PinnedPool& operator=(const PinnedPool&) = delete;

  /// Adds [base, base+bytes) as memory to serve from; the pool owns it from now until the pool is
  /// no longer used. Trims it to 16-byte boundaries. False (nothing changed) when the region
  /// overlaps one already added, is smaller than 64 bytes after trimming, or the table is full.
  bool addRegion(void* base, size_t bytes) noexcept;

  /// A block of at least `size` bytes aligned to `alignment` (0 and powers of two up to 16 mean
  /// 16), or null when `alignment` is not 0 or a power of two, exceeds kMaxAlignment, or no free
  /// chunk fits.
  void* allocate(size_t size, size_t alignment = kMinAlignment) noexcept;

  /// calloc: `count * size` zeroed bytes, 16-aligned; null on overflow or when nothing fits.
  void* allocateZeroed(size_t count, size_t size) noexcept;

  /// Returns a block to the pool, merging it with free neighbours. Pre: owns(ptr) and `ptr` is a
  /// live block from this pool (checked in debug levels; a null `ptr` is ignored).
  void deallocate(void* ptr) noexcept;

  /// Grows (into a free successor) or shrinks `ptr` in place to hold `size` bytes; false when it
  /// cannot grow in place, and then nothing changed. Pre as deallocate().
  bool resizeInPlace(void* ptr, size_t size) noexcept;

  /// realloc within this pool: in place when it can, else a new 16-aligned block here with the
  /// contents copied and `ptr` deallocated. Null when the pool has no room: `ptr` is then still
  /// live and unchanged and the caller moves it elsewhere. Pre as deallocate().
  void* reallocate(void* ptr, size_t size) noexcept;

  /// True when `ptr` lies inside one of this pool's regions. No lock: the shim calls it on every
  /// free() to route pointers. Regions are only ever added, and published with release ordering.
  bool owns(const void* ptr) const noexcept {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    const unsigned n = m_regionCount.load(std::memory_order_acquire);
    for (unsigned i = 0; i < n; ++i)
      if (p - m_regions[i].begin < m_regions[i].end - m_regions[i].begin) return true;
    return false;
  }

  /// malloc_usable_size: the bytes of `ptr`'s block that the caller may use (>= the size asked).
  /// No lock: a live block's own header is only written by calls on that block. Pre as
  /// deallocate().
  size_t usableSize(const void* ptr) const noexcept;

  PoolStats stats() const noexcept;

  /// Full-heap check (what HETOPT_DEBUG_LEVEL 3 runs after every operation): walks every region
  /// validating the boundary tags, that no two free chunks are adjacent, that the tree holds
  /// exactly the free chunks, in (size, address) order, with the red-black properties, and that the
  /// byte and block counts add up. False with a reason in `why` (may be null) when anything is off.
  /// Takes the lock; O(n log n).
  bool validate(char* why = nullptr, size_t whyBytes = 0) const noexcept;

  /// For the shim's fork protocol (shim/core/lifecycle.cpp): the lock is held across fork() so that
  /// the child never inherits it locked by a thread that does not exist there.
  void lockForFork() noexcept { m_lock.lock(); }
  void unlockAfterFork() noexcept { m_lock.unlock(); }
  /// Between lockForFork() and fork(): writes what a forked child needs of the regions inside
  /// [begin, begin + bytes) to `copy` at the same offsets (copy = begin's stand-in): live blocks
  /// whole, free chunks' headers and tree links, the fences. Free payload is left out (the child
  /// may read it as zero: nobody owns it).
  void copyForChild(const void* begin, size_t bytes, void* copy) const noexcept;

  struct FreeChunk;  // pool.cpp

 private:
  struct Region {
    uintptr_t begin = 0;
    uintptr_t end = 0;  ///< one past the fence header
  };

  FreeChunk* takeBestFit(size_t chunkBytes) noexcept;
  HETOPT_NOINLINE FreeChunk* takeAligned(size_t chunkBytes, size_t alignment) noexcept;
  void* carve(FreeChunk* c, size_t chunkBytes) noexcept;
  void releaseChunk(uintptr_t chunk, size_t bytes) noexcept;
  HETOPT_NOINLINE HETOPT_COLD void* allocationFailed() noexcept;
  void treeInsert(FreeChunk* z) noexcept;
  void treeErase(FreeChunk* z) noexcept;
  [[gnu::always_inline]] inline void relink(FreeChunk* u, FreeChunk* v) noexcept;
  template <int Down>
  HETOPT_NOINLINE void rotate(FreeChunk* x) noexcept;
  template <int Side>
  [[gnu::always_inline]] inline FreeChunk* insertFixup(FreeChunk* z) noexcept;
  template <int Side>
  [[gnu::always_inline]] inline void eraseFixup(FreeChunk*& x, FreeChunk*& xParent) noexcept;
  bool validateLocked(char* why, size_t whyBytes) const noexcept;
  void checkAfterOperation() const noexcept;

  mutable PoolLock m_lock;
  FreeChunk* m_root = nullptr;
  size_t m_capacity = 0;
  size_t m_inUse = 0;
  size_t m_peakInUse = 0;
  size_t m_free = 0;
  size_t m_freeChunks = 0;
  size_t m_liveBlocks = 0;
  size_t m_failed = 0;
  Region m_regions[kMaxRegions] = {};
  std::atomic<unsigned> m_regionCount{0};
};

}  // namespace hetopt::policies
