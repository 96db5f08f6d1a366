// SPDX-License-Identifier: MIT
/**
 * @file PinnedPool: best fit, coalescing, alignment, exhaustion, C-library semantics of the
 * malloc-family building blocks, and a multi-threaded stress with full-heap validation.
 *
 * Built twice (tests/policies/CMakeLists.txt): with HETOPT_DEBUG_LEVEL=3, so every operation is
 * followed by a full-heap check, and against the library as shipped, so the stress also runs the
 * code the shim runs. kDebugLevel (common/check.h) tells which.
 */
#include "policies/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common/check.h"

using hetopt::policies::PinnedPool;
using hetopt::policies::PoolStats;

namespace {

constexpr size_t kHeader = PinnedPool::kHeaderBytes;

/// Region memory for a test (the shim's would be pinned; the pool cannot tell the difference).
struct Arena {
  explicit Arena(size_t bytes)
      : size(bytes), mem(static_cast<std::byte*>(std::aligned_alloc(4096, bytes))) {}
  ~Arena() { std::free(mem); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  size_t size;
  std::byte* mem;
};

/// Chunk bytes the pool uses for a request (header + payload, 16-byte multiple, at least 48).
constexpr size_t chunkFor(size_t n) {
  const size_t c = (n + kHeader + 15) & ~size_t{15};
  return c < PinnedPool::kMinChunkBytes ? PinnedPool::kMinChunkBytes : c;
}

std::string validationError(const PinnedPool& pool) {
  char why[256] = {};
  return pool.validate(why, sizeof why) ? std::string() : std::string(why);
}

#define EXPECT_VALID(pool) EXPECT_EQ(validationError(pool), "")

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

bool allBytesAre(const void* p, size_t n, unsigned char v) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != v) return false;
  return true;
}

}  // namespace

TEST(PinnedPool, EmptyPoolServesNothingWithoutInitialisation) {
  // constinit: usable from the malloc path before any constructor ran.
  static constinit PinnedPool empty;
  int onStack = 0;
  EXPECT_EQ(empty.allocate(16), nullptr);
  EXPECT_EQ(empty.allocate(4096, 4096), nullptr);
  EXPECT_EQ(empty.allocateZeroed(4, 4), nullptr);
  EXPECT_FALSE(empty.owns(&onStack));
  EXPECT_FALSE(empty.owns(nullptr));
  empty.deallocate(nullptr);
  const PoolStats s = empty.stats();
  EXPECT_EQ(s.capacityBytes, 0u);
  EXPECT_EQ(s.freeChunks, 0u);
  EXPECT_EQ(s.largestFreeBlock, 0u);
  EXPECT_EQ(s.failedAllocations, 3u);
  EXPECT_VALID(empty);
}

TEST(PinnedPool, AddRegionTrimsRejectsOverlapAndOwnsItsRanges) {
  Arena a(1 << 20);
  PinnedPool pool;
  // Misaligned base and length: trimmed to 16-byte boundaries inside the given range.
  ASSERT_TRUE(pool.addRegion(a.mem + 3, 65536 - 3 - 5));
  PoolStats s = pool.stats();
  EXPECT_EQ(s.capacityBytes, 65536u - 16 - 16);
  EXPECT_EQ(s.freeChunks, 1u);
  EXPECT_EQ(s.freeBytes, s.capacityBytes - PinnedPool::kRegionOverhead);
  EXPECT_EQ(s.largestFreeBlock, s.freeBytes - kHeader);
  EXPECT_FALSE(pool.owns(a.mem + 3));  // the trimmed-off head is not the pool's
  EXPECT_TRUE(pool.owns(a.mem + 16));
  EXPECT_TRUE(pool.owns(a.mem + 65536 - 17));
  EXPECT_FALSE(pool.owns(a.mem + 65536 - 16));

  EXPECT_FALSE(pool.addRegion(a.mem + 4096, 8192));  // overlaps the first
  EXPECT_FALSE(pool.addRegion(a.mem + 65536, 63));   // too small for a chunk + fence
  EXPECT_FALSE(pool.addRegion(nullptr, 4096));
  ASSERT_TRUE(pool.addRegion(a.mem + 65536, 65536));  // adjacent is fine: a fence between
  EXPECT_TRUE(pool.owns(a.mem + 65536 + 100));
  EXPECT_EQ(pool.stats().regions, 2u);

  // A block never spans two regions, even adjacent ones.
  EXPECT_EQ(pool.allocate(100000), nullptr);
  void* big = pool.allocate(60000);
  ASSERT_NE(big, nullptr);
  void* big2 = pool.allocate(60000);
  ASSERT_NE(big2, nullptr);
  EXPECT_TRUE((addr(big) < addr(a.mem + 65536)) != (addr(big2) < addr(a.mem + 65536)));

  // The table is fixed: regions beyond kMaxRegions are refused, not allocated for.
  unsigned added = 2;
  for (size_t off = 2 * 65536; off + 4096 <= a.size; off += 4096)
    if (pool.addRegion(a.mem + off, 4096)) ++added;
  EXPECT_EQ(added, PinnedPool::kMaxRegions);
  EXPECT_VALID(pool);
  pool.deallocate(big);
  pool.deallocate(big2);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, BestFitTakesTheSmallestChunkThatFits) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  // Holes of 1024, 3072 and 2048 chunk bytes, kept apart by live guards.
  void* small = pool.allocate(1024 - kHeader);
  void* g1 = pool.allocate(16);
  void* large = pool.allocate(3072 - kHeader);
  void* g2 = pool.allocate(16);
  void* medium = pool.allocate(2048 - kHeader);
  void* g3 = pool.allocate(16);
  ASSERT_TRUE(small && g1 && large && g2 && medium && g3);
  pool.deallocate(small);
  pool.deallocate(large);
  pool.deallocate(medium);
  EXPECT_EQ(pool.stats().freeChunks, 4u);  // three holes + the tail

  EXPECT_EQ(pool.allocate(1900), medium);  // 2048 is the smallest hole >= 1920
  EXPECT_EQ(pool.allocate(900), small);
  EXPECT_EQ(pool.allocate(2500), large);
  void* tail = pool.allocate(5000);  // no hole is large enough: from the tail, past the guards
  EXPECT_GT(addr(tail), addr(g3));
  EXPECT_VALID(pool);
}

TEST(PinnedPool, BestFitPrefersTheLowestAddressAmongEqualSizes) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  void* x[3];
  void* guard[3];
  for (int i = 0; i < 3; ++i) {
    x[i] = pool.allocate(4000);
    guard[i] = pool.allocate(16);
  }
  pool.deallocate(x[1]);
  pool.deallocate(x[2]);
  pool.deallocate(x[0]);
  EXPECT_EQ(pool.allocate(4000), x[0]);
  EXPECT_EQ(pool.allocate(4000), x[1]);
  EXPECT_EQ(pool.allocate(4000), x[2]);
  EXPECT_VALID(pool);
  (void)guard;
}

TEST(PinnedPool, FreeCoalescesWithBothNeighbours) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  void* p[4];
  for (auto& q : p) q = pool.allocate(8192 - kHeader);
  void* guard = pool.allocate(16);
  ASSERT_TRUE(p[0] && p[1] && p[2] && p[3] && guard);
  pool.deallocate(p[0]);
  pool.deallocate(p[2]);
  EXPECT_EQ(pool.stats().freeChunks, 3u);
  pool.deallocate(p[1]);  // merges with the free chunk before and the one after
  EXPECT_EQ(pool.stats().freeChunks, 2u);
  EXPECT_EQ(pool.stats().largestFreeBlock, a.size - 16 - 4 * 8192 - 48 - kHeader);
  // The merged 3 * 8192 hole now holds a block none of its parts could.
  EXPECT_EQ(pool.allocate(3 * 8192 - kHeader), p[0]);
  pool.deallocate(p[0]);
  pool.deallocate(p[3]);  // merges with the hole before it
  EXPECT_EQ(pool.stats().freeChunks, 2u);
  pool.deallocate(guard);  // and now everything is one chunk again
  EXPECT_EQ(pool.stats().freeChunks, 1u);
  EXPECT_EQ(pool.allocate(a.size - 16 - kHeader), a.mem + kHeader);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, HonoursEveryPowerOfTwoAlignment) {
  Arena a(16 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem + 16, a.size - 16));  // a region start that is only 16-aligned
  std::vector<std::pair<void*, size_t>> live;
  unsigned char fill = 1;
  for (size_t align = 1; align <= (size_t{1} << 20); align <<= 1) {
    for (size_t size :
         {size_t{0}, size_t{1}, size_t{24}, size_t{100}, size_t{4096}, size_t{70000}}) {
      void* p = pool.allocate(size, align);
      ASSERT_NE(p, nullptr) << "align " << align << " size " << size;
      EXPECT_EQ(addr(p) % std::max<size_t>(align, 16), 0u) << "align " << align;
      ASSERT_GE(pool.usableSize(p), size);
      memset(p, fill, pool.usableSize(p));
      live.emplace_back(p, fill++);
    }
  }
  EXPECT_VALID(pool);
  for (auto [p, v] : live) {
    EXPECT_TRUE(allBytesAre(p, pool.usableSize(p), static_cast<unsigned char>(v)));
    pool.deallocate(p);
  }
  EXPECT_EQ(pool.stats().freeChunks, 1u);
  EXPECT_EQ(pool.allocate(64, 3), nullptr);  // not a power of two: posix_memalign's EINVAL
  EXPECT_EQ(pool.allocate(64, 48), nullptr);
  EXPECT_EQ(pool.allocate(64, PinnedPool::kMaxAlignment * 2), nullptr);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, AlignedRequestUsesTheBestFitWhenItHappensToBeAligned) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  // A page-aligned hole of exactly one page + header in front, then a guard.
  void* pad = pool.allocate(4096 - 2 * kHeader);  // chunk ends at 4096 - 16: next payload at 4096
  void* hole = pool.allocate(4096);
  void* guard = pool.allocate(16);
  ASSERT_EQ(addr(hole) % 4096, 0u);
  pool.deallocate(hole);
  EXPECT_EQ(pool.allocate(4096, 4096), hole);  // no over-sized search when the fit is aligned
  EXPECT_VALID(pool);
  (void)pad;
  (void)guard;
}

TEST(PinnedPool, ExhaustionReturnsNullAndRecovers) {
  Arena a(256 << 10);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  std::vector<void*> blocks;
  while (void* p = pool.allocate(4000)) blocks.push_back(p);
  EXPECT_EQ(blocks.size(), (a.size - 16) / chunkFor(4000));
  EXPECT_EQ(pool.allocate(4000), nullptr);
  EXPECT_EQ(pool.allocate(1, 4096), nullptr);
  EXPECT_EQ(pool.allocate(SIZE_MAX), nullptr);
  EXPECT_EQ(pool.allocate(SIZE_MAX - 8, 64), nullptr);
  EXPECT_EQ(pool.allocateZeroed(SIZE_MAX / 2, 3), nullptr);  // count * size overflows
  EXPECT_GE(pool.stats().failedAllocations, 6u);
  pool.deallocate(blocks[7]);
  void* again = pool.allocate(4000);
  EXPECT_EQ(again, blocks[7]);
  blocks[7] = again;
  for (void* p : blocks) pool.deallocate(p);
  EXPECT_EQ(pool.stats().inUseBytes, 0u);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, UsableSizeCoversTheRequestAndAllOfItMayBeWritten) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  std::vector<void*> live;
  for (size_t n = 0; n <= 300; ++n) {
    void* p = pool.allocate(n);
    ASSERT_NE(p, nullptr);
    const size_t usable = pool.usableSize(p);
    EXPECT_GE(usable, n);
    EXPECT_EQ(usable, chunkFor(n) - kHeader) << n;  // no more slack than the rounding
    memset(p, 0xA5, usable);  // writing all of it must not trample a neighbour's tags
    live.push_back(p);
  }
  std::vector<void*> sorted = live;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // malloc(0) unique
  EXPECT_VALID(pool);
  for (void* p : live) pool.deallocate(p);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, AllocateZeroedZeroesReusedMemory) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  void* dirty = pool.allocate(50000);
  memset(dirty, 0xFF, pool.usableSize(dirty));
  pool.deallocate(dirty);
  void* z = pool.allocateZeroed(1000, 50);
  ASSERT_EQ(z, dirty);  // the same memory came back, and calloc cleared it
  EXPECT_TRUE(allBytesAre(z, 50000, 0));
  EXPECT_VALID(pool);
}

TEST(PinnedPool, ReallocateGrowsInPlaceIntoAFreeSuccessor) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  auto* p = static_cast<unsigned char*>(pool.allocate(1000));
  void* next = pool.allocate(5000);
  void* guard = pool.allocate(16);
  for (int i = 0; i < 1000; ++i) p[i] = static_cast<unsigned char>(i * 7);
  pool.deallocate(next);
  const size_t inUseBefore = pool.stats().inUseBytes;
  EXPECT_EQ(pool.reallocate(p, 4000), p);
  EXPECT_GE(pool.usableSize(p), 4000u);
  EXPECT_EQ(pool.stats().inUseBytes, inUseBefore + chunkFor(4000) - chunkFor(1000));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7));
  // The successor's remainder stayed free and in the tree: it can be allocated.
  EXPECT_EQ(pool.allocate(900), p + chunkFor(4000));
  EXPECT_VALID(pool);
  (void)guard;
}

TEST(PinnedPool, ReallocateMovesWhenItCannotGrowInPlace) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  auto* p = static_cast<unsigned char*>(pool.allocate(1000));
  void* neighbour = pool.allocate(16);
  for (int i = 0; i < 1000; ++i) p[i] = static_cast<unsigned char>(i * 13);
  EXPECT_FALSE(pool.resizeInPlace(p, 4000));
  auto* q = static_cast<unsigned char*>(pool.reallocate(p, 4000));
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(q[i], static_cast<unsigned char>(i * 13));
  EXPECT_EQ(pool.stats().liveBlocks, 2u);
  EXPECT_EQ(pool.allocate(1000), p);  // the old block went back to the pool
  EXPECT_VALID(pool);
  (void)neighbour;
}

TEST(PinnedPool, ReallocateShrinksInPlaceAndReturnsTheTail) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  auto* p = static_cast<unsigned char*>(pool.allocate(100000));
  void* guard = pool.allocate(16);
  memset(p, 0x3C, 100000);
  const size_t freeBefore = pool.stats().freeBytes;
  EXPECT_EQ(pool.reallocate(p, 1000), p);
  EXPECT_EQ(pool.usableSize(p), chunkFor(1000) - kHeader);
  EXPECT_EQ(pool.stats().freeBytes, freeBefore + chunkFor(100000) - chunkFor(1000));
  EXPECT_TRUE(allBytesAre(p, 1000, 0x3C));
  EXPECT_EQ(pool.allocate(50000), p + chunkFor(1000));  // the tail is a free chunk
  // Shrinking by less than a chunk's worth keeps the block as it is.
  void* q = pool.allocate(1000);
  const size_t usable = pool.usableSize(q);
  EXPECT_EQ(pool.reallocate(q, 990), q);
  EXPECT_EQ(pool.usableSize(q), usable);
  EXPECT_VALID(pool);
  (void)guard;
}

TEST(PinnedPool, FailedReallocateLeavesTheBlockAlone) {
  Arena a(64 << 10);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  auto* p = static_cast<unsigned char*>(pool.allocate(20000));
  memset(p, 0x5A, 20000);
  const size_t usable = pool.usableSize(p);
  EXPECT_EQ(pool.reallocate(p, 200000), nullptr);  // the caller moves it to another allocator
  EXPECT_EQ(pool.usableSize(p), usable);
  EXPECT_TRUE(allBytesAre(p, 20000, 0x5A));
  EXPECT_EQ(pool.stats().liveBlocks, 1u);
  void* fresh = pool.reallocate(nullptr, 100);  // realloc(NULL, n) is malloc(n)
  EXPECT_NE(fresh, nullptr);
  pool.deallocate(fresh);
  pool.deallocate(p);
  EXPECT_EQ(pool.stats().freeChunks, 1u);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, FreeingEverythingReturnsToTheInitialSingleChunk) {
  Arena a(16 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  const PoolStats initial = pool.stats();
  std::mt19937_64 rng(42);
  std::vector<void*> live;
  for (int i = 0; i < 5000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      pool.deallocate(live[k]);
      live[k] = live.back();
      live.pop_back();
    } else if (void* p = pool.allocate(rng() % 20000, size_t{1} << (rng() % 13))) {
      live.push_back(p);
    }
  }
  EXPECT_GT(pool.stats().freeChunks, 10u);  // it really was fragmented
  std::shuffle(live.begin(), live.end(), rng);
  for (void* p : live) pool.deallocate(p);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.freeChunks, 1u);
  EXPECT_EQ(s.freeBytes, initial.freeBytes);
  EXPECT_EQ(s.largestFreeBlock, initial.largestFreeBlock);
  EXPECT_EQ(s.inUseBytes, 0u);
  EXPECT_EQ(s.liveBlocks, 0u);
  EXPECT_GT(s.peakInUseBytes, 0u);
  EXPECT_EQ(pool.allocate(initial.largestFreeBlock), a.mem + kHeader);
  EXPECT_VALID(pool);
}

TEST(PinnedPool, ValidateReportsATrampledHeader) {
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  auto* p = static_cast<unsigned char*>(pool.allocate(1000));
  EXPECT_VALID(pool);
  // A buffer overrun past the usable size reaches the next chunk's header.
  const size_t usable = pool.usableSize(p);
  unsigned char saved[16];
  memcpy(saved, p + usable, 16);
  memset(p + usable, 0x77, 16);
  char why[256] = {};
  EXPECT_FALSE(pool.validate(why, sizeof why));
  EXPECT_NE(std::string(why).find("chunk"), std::string::npos) << why;
  memcpy(p + usable, saved, 16);
  EXPECT_VALID(pool);
}

#if HETOPT_DEBUG_LEVEL >= 1
TEST(PinnedPoolDeathTest, DoubleFreeIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  void* p = pool.allocate(100);
  void* guard = pool.allocate(100);
  pool.deallocate(p);
  EXPECT_DEATH(pool.deallocate(p), "hetopt: assertion failed at .*pool.cpp");
  (void)guard;
}
#endif

#if HETOPT_DEBUG_LEVEL >= 3
TEST(PinnedPoolDeathTest, ExpensiveLevelChecksTheHeapAfterEveryOperation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Arena a(1 << 20);
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size));
  auto* p = static_cast<unsigned char*>(pool.allocate(1000));
  void* q = pool.allocate(1000);
  // Overrun into q's header: q's own operations would not notice, the heap walk does.
  memset(p + pool.usableSize(p), 0, 8);
  EXPECT_DEATH(pool.allocate(10), "hetopt: pool: heap check failed");
  (void)q;
}
#endif

// Many threads, random sizes and alignments, allocate / free / realloc, contents checked; a
// watcher validates concurrently; at the end no two live blocks overlap and the heap is whole.
TEST(PinnedPool, StressManyThreads) {
  constexpr int kThreads = 4;
  constexpr int kOps = HETOPT_DEBUG_LEVEL >= 3 ? 8000 : 100000;
  Arena a(16 << 20);  // small enough that some requests find no room (the fallback path)
  PinnedPool pool;
  ASSERT_TRUE(pool.addRegion(a.mem, a.size / 2));
  ASSERT_TRUE(pool.addRegion(a.mem + a.size / 2 + 4096, a.size / 2 - 4096));

  struct Block {
    unsigned char* p;
    size_t size;
    unsigned char tag;
  };
  std::vector<std::vector<Block>> lives(kThreads);
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::atomic<size_t> exhausted{0};
  // Counted, and the first few described (ADD_FAILURE from many threads would flood the log).
  auto error = [&](const char* what, const void* p, size_t size) {
    if (errors.fetch_add(1) < 5) ADD_FAILURE() << what << " at " << p << " size " << size;
  };

  auto worker = [&](int t) {
    std::mt19937_64 rng(1000 + t);
    std::vector<Block>& live = lives[t];
    unsigned char tag = static_cast<unsigned char>(t * 37);
    for (int op = 0; op < kOps; ++op) {
      const unsigned choice = rng() % 10;
      if (!live.empty() && (choice < 3 || live.size() > 200)) {
        const size_t k = rng() % live.size();
        Block b = live[k];
        if (!allBytesAre(b.p, b.size, b.tag)) error("contents changed", b.p, b.size);
        pool.deallocate(b.p);
        live[k] = live.back();
        live.pop_back();
      } else if (!live.empty() && choice < 5) {
        Block& b = live[rng() % live.size()];
        const size_t newSize = rng() % 2 && b.size < (1 << 20) ? b.size * 2 + 1 : b.size / 3;
        auto* q = static_cast<unsigned char*>(pool.reallocate(b.p, newSize));
        if (q == nullptr) {  // no room: the block must be untouched
          ++exhausted;
          if (!allBytesAre(b.p, b.size, b.tag)) error("failed realloc changed", b.p, b.size);
          continue;
        }
        if (!allBytesAre(q, std::min(b.size, newSize), b.tag)) error("realloc lost", q, newSize);
        memset(q, b.tag, newSize);
        b.p = q;
        b.size = newSize;
      } else {
        const size_t size = rng() % 8 == 0 ? rng() % (256 << 10) : rng() % 4096;
        const size_t align = choice != 9 && rng() % 4 == 0 ? size_t{1} << (rng() % 17) : 0;
        auto* p = static_cast<unsigned char*>(choice == 9 ? pool.allocateZeroed(1, size)
                                                          : pool.allocate(size, align));
        if (p == nullptr) {
          ++exhausted;
          continue;
        }
        if ((align > 16 && addr(p) % align != 0) || addr(p) % 16 != 0)
          error("misaligned", p, align);
        if (pool.usableSize(p) < size) error("usable size too small", p, size);
        if (choice == 9 && !allBytesAre(p, size, 0)) error("calloc not zeroed", p, size);
        ++tag;
        memset(p, tag, size);
        live.push_back({p, size, tag});
      }
    }
  };
  std::thread watcher([&] {
    char why[256];
    while (!done.load()) {
      if (!pool.validate(why, sizeof why)) {
        ADD_FAILURE() << "concurrent validate: " << why;
        ++errors;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  done = true;
  watcher.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_VALID(pool);

  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (auto& live : lives)
    for (const Block& b : live) {
      EXPECT_TRUE(pool.owns(b.p));
      ranges.emplace_back(addr(b.p), addr(b.p) + pool.usableSize(b.p));
    }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    ASSERT_LE(ranges[i - 1].second + kHeader, ranges[i].first) << "live blocks overlap";
  const PoolStats atEnd = pool.stats();
  EXPECT_EQ(atEnd.liveBlocks, ranges.size());
  EXPECT_GT(atEnd.peakInUseBytes, a.size / 4);  // the pool was really used, not just touched
  std::printf("stress: %zu live blocks, %zu free chunks, peak %zu KiB, %zu refused for room\n",
              atEnd.liveBlocks, atEnd.freeChunks, atEnd.peakInUseBytes >> 10, exhausted.load());

  for (auto& live : lives)
    for (const Block& b : live) {
      EXPECT_TRUE(allBytesAre(b.p, b.size, b.tag));
      pool.deallocate(b.p);
    }
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.freeChunks, 2u);  // one per region
  EXPECT_EQ(s.inUseBytes, 0u);
  EXPECT_EQ(s.capacityBytes, s.freeBytes + 2 * PinnedPool::kRegionOverhead);
  EXPECT_VALID(pool);
}
