// SPDX-License-Identifier: MIT
/**
 * @file PinnedPool: best fit over an intrusive red-black tree of free chunks, boundary tags,
 * immediate coalescing (pool.h says why and what callers may rely on).
 *
 * Checks in tiers (common/check.h, HETOPT_DEBUG_LEVEL): HETOPT_ASSERT checks arguments and the
 * block's own header (double free, foreign pointer, trampled header); HETOPT_ASSERT_INTERNAL the
 * neighbours' tags and tree links each operation touches; level 3 runs validate() (a walk of every
 * region and the tree, O(n log n)) after every operation, for tests only.
 */
#include "policies/pool.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/check.h"

namespace hetopt::policies {

namespace {

// Tag bits. Chunk sizes are multiples of 16, so the low 4 bits of a size word are free.
constexpr size_t kInUse = 1;      // in ChunkHeader::head: this chunk is handed out (or a fence)
constexpr size_t kPrevInUse = 1;  // in ChunkHeader::prevTag: the predecessor is in use / absent
constexpr size_t kFlagMask = 15;
// Requests above this are refused up front, so that no size computation below can overflow.
constexpr size_t kMaxRequest = SIZE_MAX / 4;

}  // namespace

/*
 * ChunkHeader: the 16 bytes in front of every chunk (and the fence at each region's end).
 *
 *   prevTag  about the predecessor: kPrevInUse when it is in use or there is none (first chunk);
 *            otherwise its size (a multiple of 16, so bit 0 is clear). This word is the free
 *            predecessor's footer; it is written only by operations on the predecessor.
 *   head     this chunk's size | kInUse. Written only by operations on this chunk itself, so the
 *            owner of a live block may read it without the lock (usableSize).
 *
 * FreeChunk: a free chunk also holds its red-black tree node after the header.
 *
 * Invariants (validate() checks all of them; the numbers are referred to below):
 *   I1  a region is chunks laid end to end from its 16-aligned begin up to a fence header (size 0,
 *       kInUse) at end - 16; every chunk size is a multiple of 16 and >= kMinChunkBytes.
 *   I2  prevTag of every chunk and of the fence matches its predecessor as described above.
 *   I3  no two free chunks are adjacent (coalescing is immediate), so a free chunk's predecessor
 *       and successor are in use (or absent / the fence).
 *   I4  the tree holds exactly the free chunks, ordered by (size, address), red-black: the root is
 *       black, a red node has black children, every root-to-leaf path has the same black count;
 *       parent links match.
 *   I5  m_free = sum of free chunk sizes, m_freeChunks = their count, m_inUse = sum of in-use chunk
 *       sizes, m_liveBlocks = their count, m_capacity = m_inUse + m_free + 16 * regions,
 *       m_peakInUse >= m_inUse.
 *   I6  a payload starts right after its header, so a block is as aligned as its chunk: 16 always
 *       (chunk sizes and region begins are multiples of 16), more when an aligned allocation split
 *       off a leading free chunk.
 */
struct ChunkHeader {
  size_t prevTag;
  size_t head;
};

struct PinnedPool::FreeChunk : ChunkHeader {
  FreeChunk*
      child[2];  // [kLeft], [kRight]: indexed, so each mirrored case of the tree is written once
  FreeChunk* parent;
  size_t red;  // 1 red, 0 black (a word: the node is 48 bytes either way)
};

static_assert(sizeof(ChunkHeader) == PinnedPool::kHeaderBytes);
static_assert(sizeof(PinnedPool::FreeChunk) == PinnedPool::kMinChunkBytes);
static_assert(PinnedPool::kMinAlignment == alignof(max_align_t));
static_assert(PinnedPool::kMinChunkBytes % PinnedPool::kMinAlignment == 0);

namespace {

using FreeChunk = PinnedPool::FreeChunk;
constexpr int kLeft = 0, kRight = 1;

inline ChunkHeader* chunkAt(uintptr_t a) { return reinterpret_cast<ChunkHeader*>(a); }
inline FreeChunk* freeAt(uintptr_t a) { return reinterpret_cast<FreeChunk*>(a); }
inline uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
inline size_t chunkSize(const ChunkHeader* c) { return c->head & ~kFlagMask; }
inline bool isInUse(const ChunkHeader* c) { return (c->head & kInUse) != 0; }
inline ChunkHeader* headerOf(const void* payload) {
  return chunkAt(addr(payload) - PinnedPool::kHeaderBytes);
}
inline void* payloadOf(const ChunkHeader* c) {
  return reinterpret_cast<void*>(addr(c) + PinnedPool::kHeaderBytes);
}
inline ChunkHeader* nextOf(const ChunkHeader* c) { return chunkAt(addr(c) + chunkSize(c)); }

// (size, address): best fit takes the smallest size, and the lowest address among equals, which
// keeps reuse near the region's start and the large tail intact.
inline bool keyLess(const FreeChunk* a, const FreeChunk* b) {
  const size_t sa = chunkSize(a), sb = chunkSize(b);
  return sa < sb || (sa == sb && a < b);
}
inline bool isRed(const FreeChunk* n) { return n != nullptr && n->red != 0; }

/// Chunk bytes for a request of `size` payload bytes; 0 when the request is too large.
inline size_t chunkBytesFor(size_t size) {
  if (HETOPT_UNLIKELY(size > kMaxRequest)) return 0;
  const size_t n = (size + PinnedPool::kHeaderBytes + PinnedPool::kMinAlignment - 1) &
                   ~(PinnedPool::kMinAlignment - 1);
  return n < PinnedPool::kMinChunkBytes ? PinnedPool::kMinChunkBytes : n;
}

/// Bytes to split off the front of free chunk `c` so that its payload becomes `alignment`-aligned;
/// 0 or at least kMinChunkBytes (a smaller gap could not be a chunk of its own, so it moves one
/// alignment step further; alignment > 16 here, so one step is enough).
inline size_t leadingGap(const FreeChunk* c, size_t alignment) {
  const uintptr_t payload = addr(c) + PinnedPool::kHeaderBytes;
  size_t gap = ((payload + alignment - 1) & ~(alignment - 1)) - payload;
  if (gap != 0 && gap < PinnedPool::kMinChunkBytes) gap += alignment;
  return gap;
}

FreeChunk* lowerBound(FreeChunk* node, size_t chunkBytes) {
  FreeChunk* best = nullptr;
  while (node != nullptr) {
    if (chunkSize(node) >= chunkBytes) {
      best = node;
      node = node->child[kLeft];
    } else {
      node = node->child[kRight];
    }
  }
  return best;
}

const FreeChunk* treeFind(const FreeChunk* node, const FreeChunk* key) {
  while (node != nullptr && node != key)
    node = keyLess(key, node) ? node->child[kLeft] : node->child[kRight];
  return node;
}

}  // namespace

void PoolLock::lockContended() noexcept {
  for (unsigned spins = 0;; ++spins) {
    // Test before test-and-set: waiters spin on a shared cache line instead of bouncing it.
    if (!m_locked.load(std::memory_order_relaxed) &&
        !m_locked.exchange(true, std::memory_order_acquire))
      return;
    if (spins < 100) {
      cpuRelax();
    } else {
      std::this_thread::yield();  // the holder may be preempted: let it run
    }
  }
}

// ---- red-black tree (CLRS, with null leaves and explicit parent tracking in erase) ----

// Each mirrored case is written once, for a side known at compile time: a side chosen at run
// time was measurably slower on bench_pool.

// u's parent (or the root) points to v instead.
inline void PinnedPool::relink(FreeChunk* u, FreeChunk* v) noexcept {
  if (u->parent == nullptr)
    m_root = v;
  else if (u == u->parent->child[kLeft])
    u->parent->child[kLeft] = v;
  else
    u->parent->child[kRight] = v;
}

// x goes down to side Down; its child on the other side takes its place.
template <int Down>
void PinnedPool::rotate(FreeChunk* x) noexcept {
  constexpr int kUp = 1 - Down;
  FreeChunk* y = x->child[kUp];
  x->child[kUp] = y->child[Down];
  if (y->child[Down] != nullptr) y->child[Down]->parent = x;
  y->parent = x->parent;
  relink(x, y);
  y->child[Down] = x;
  x->parent = y;
}

// One step up from red z under a red parent on side Side of its grandparent; returns where to go
// on.
template <int Side>
inline FreeChunk* PinnedPool::insertFixup(FreeChunk* z) noexcept {
  constexpr int kOther = 1 - Side;
  FreeChunk* p = z->parent;
  FreeChunk* g = p->parent;  // p is red, so not the root
  FreeChunk* u = g->child[kOther];
  if (isRed(u)) {
    p->red = 0;
    u->red = 0;
    g->red = 1;
    return g;
  }
  if (z == p->child[kOther]) {
    z = p;
    rotate<Side>(z);
    p = z->parent;
  }
  p->red = 0;
  g->red = 1;
  rotate<kOther>(g);
  return z;  // its parent is black now: done
}

// One step for x (on side Side of xParent) that carries an extra black.
template <int Side>
inline void PinnedPool::eraseFixup(FreeChunk*& x, FreeChunk*& xParent) noexcept {
  constexpr int kOther = 1 - Side;
  FreeChunk* w = xParent->child[kOther];  // non-null: the other side has black height >= 1
  if (isRed(w)) {
    w->red = 0;
    xParent->red = 1;
    rotate<Side>(xParent);
    w = xParent->child[kOther];
  }
  if (!isRed(w->child[kLeft]) && !isRed(w->child[kRight])) {
    w->red = 1;
    x = xParent;
    xParent = x->parent;
    return;
  }
  if (!isRed(w->child[kOther])) {
    w->child[Side]->red = 0;
    w->red = 1;
    rotate<kOther>(w);
    w = xParent->child[kOther];
  }
  w->red = xParent->red;
  xParent->red = 0;
  w->child[kOther]->red = 0;
  rotate<Side>(xParent);
  x = m_root;
}

void PinnedPool::treeInsert(FreeChunk* z) noexcept {
  HETOPT_ASSERT_INTERNAL(!isInUse(z) && chunkSize(z) >= kMinChunkBytes);
  HETOPT_ASSERT_INTERNAL(treeFind(m_root, z) == nullptr);
  m_free += chunkSize(z);
  ++m_freeChunks;
  FreeChunk* parent = nullptr;
  FreeChunk** link = &m_root;
  while (*link != nullptr) {
    parent = *link;
    link = keyLess(z, parent) ? &parent->child[kLeft] : &parent->child[kRight];
  }
  z->child[kLeft] = z->child[kRight] = nullptr;
  z->parent = parent;
  z->red = 1;
  *link = z;

  while (isRed(z->parent))
    z = z->parent == z->parent->parent->child[kLeft] ? insertFixup<kLeft>(z)
                                                     : insertFixup<kRight>(z);
  m_root->red = 0;
}

void PinnedPool::treeErase(FreeChunk* z) noexcept {
  HETOPT_ASSERT_INTERNAL(treeFind(m_root, z) == z);
  m_free -= chunkSize(z);
  --m_freeChunks;
  auto transplant = [this](FreeChunk* u, FreeChunk* v) {
    relink(u, v);
    if (v != nullptr) v->parent = u->parent;
  };

  FreeChunk* x;
  FreeChunk* xParent;
  size_t removedRed;
  if (z->child[kLeft] == nullptr) {
    x = z->child[kRight];
    xParent = z->parent;
    removedRed = z->red;
    transplant(z, z->child[kRight]);
  } else if (z->child[kRight] == nullptr) {
    x = z->child[kLeft];
    xParent = z->parent;
    removedRed = z->red;
    transplant(z, z->child[kLeft]);
  } else {
    FreeChunk* y = z->child[kRight];
    while (y->child[kLeft] != nullptr) y = y->child[kLeft];
    removedRed = y->red;
    x = y->child[kRight];
    if (y->parent == z) {
      xParent = y;
    } else {
      xParent = y->parent;
      transplant(y, y->child[kRight]);
      y->child[kRight] = z->child[kRight];
      y->child[kRight]->parent = y;
    }
    transplant(z, y);
    y->child[kLeft] = z->child[kLeft];
    y->child[kLeft]->parent = y;
    y->red = z->red;
  }
  if (removedRed) return;

  // A black node left: x carries an extra black. x may be null, hence xParent.
  while (x != m_root && !isRed(x)) {
    if (x == xParent->child[kLeft])
      eraseFixup<kLeft>(x, xParent);
    else
      eraseFixup<kRight>(x, xParent);
  }
  if (x != nullptr) x->red = 0;
}

// ---- regions ----

bool PinnedPool::addRegion(void* base, size_t bytes) noexcept {
  const uintptr_t b = addr(base);
  if (base == nullptr || bytes > UINTPTR_MAX - b - kMinAlignment) return false;
  const uintptr_t begin = (b + kMinAlignment - 1) & ~(kMinAlignment - 1);
  const uintptr_t end = (b + bytes) & ~(kMinAlignment - 1);
  if (end < begin || end - begin < kMinChunkBytes + kRegionOverhead) return false;

  m_lock.lock();
  const unsigned n = m_regionCount.load(std::memory_order_relaxed);
  bool ok = n < kMaxRegions;
  for (unsigned i = 0; ok && i < n; ++i)
    ok = end <= m_regions[i].begin || m_regions[i].end <= begin;
  if (ok) {
    const size_t chunkBytes = end - kRegionOverhead - begin;
    FreeChunk* first = freeAt(begin);
    first->prevTag = kPrevInUse;  // nothing before it: never coalesce backwards out of the region
    first->head = chunkBytes;
    ChunkHeader* fence = chunkAt(end - kRegionOverhead);
    fence->prevTag = chunkBytes;
    fence->head = kInUse;  // size 0, in use: never coalesced, ends every walk
    treeInsert(first);
    m_capacity += end - begin;
    m_regions[n] = Region{begin, end};
    m_regionCount.store(n + 1, std::memory_order_release);  // owns() readers see a complete entry
    checkAfterOperation();
  }
  m_lock.unlock();
  return ok;
}

// ---- allocation ----

PinnedPool::FreeChunk* PinnedPool::takeBestFit(size_t chunkBytes) noexcept {
  FreeChunk* c = lowerBound(m_root, chunkBytes);
  if (HETOPT_LIKELY(c != nullptr)) treeErase(c);
  return c;
}

PinnedPool::FreeChunk* PinnedPool::takeAligned(size_t chunkBytes, size_t alignment) noexcept {
  // The best fit by size often is aligned enough (candidate blocks are large and page-sized); only
  // when it is not, ask for a chunk that surely fits at any address. A chunk between the two sizes
  // that happens to be aligned may be missed: the price of staying O(log n).
  FreeChunk* c = lowerBound(m_root, chunkBytes);
  if (c == nullptr || chunkSize(c) < leadingGap(c, alignment) + chunkBytes) {
    c = lowerBound(m_root, chunkBytes + alignment + kMinChunkBytes);
    if (c == nullptr) return nullptr;
  }
  treeErase(c);
  const size_t gap = leadingGap(c, alignment);
  if (gap == 0) return c;
  // Split [gap | rest]: the gap stays free (its predecessor is in use by I3, so it keeps c's
  // prevTag), the rest is returned still free, out of the tree, for carve().
  const size_t whole = chunkSize(c);
  FreeChunk* rest = freeAt(addr(c) + gap);
  rest->prevTag = gap;
  rest->head = whole - gap;
  nextOf(rest)->prevTag = whole - gap;
  c->head = gap;
  treeInsert(c);
  return rest;
}

void* PinnedPool::carve(FreeChunk* c, size_t chunkBytes) noexcept {
  // c: free, out of the tree, its successor's prevTag == its size. Hands out its front and puts a
  // tail large enough to be a chunk back into the tree.
  const size_t whole = chunkSize(c);
  HETOPT_ASSERT_INTERNAL(whole >= chunkBytes && nextOf(c)->prevTag == whole);
  size_t taken = whole;
  if (whole - chunkBytes >= kMinChunkBytes) {
    taken = chunkBytes;
    FreeChunk* tail = freeAt(addr(c) + chunkBytes);
    tail->prevTag = kPrevInUse;
    tail->head = whole - chunkBytes;
    nextOf(tail)->prevTag = whole - chunkBytes;
    treeInsert(tail);
  } else {
    nextOf(c)->prevTag = kPrevInUse;
  }
  c->head = taken | kInUse;
  m_inUse += taken;
  if (m_inUse > m_peakInUse) m_peakInUse = m_inUse;
  ++m_liveBlocks;
  return payloadOf(c);
}

void* PinnedPool::allocationFailed() noexcept {
  ++m_failed;
  m_lock.unlock();
  return nullptr;
}

void* PinnedPool::allocate(size_t size, size_t alignment) noexcept {
  if (HETOPT_LIKELY(alignment <= kMinAlignment && (alignment & (alignment - 1)) == 0)) {
    alignment = kMinAlignment;
  } else if (HETOPT_UNLIKELY((alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment)) {
    return nullptr;  // posix_memalign's EINVAL: the caller's system allocator says so
  }
  const size_t chunkBytes = chunkBytesFor(size);
  m_lock.lock();
  if (HETOPT_UNLIKELY(chunkBytes == 0)) return allocationFailed();
  FreeChunk* c =
      alignment == kMinAlignment ? takeBestFit(chunkBytes) : takeAligned(chunkBytes, alignment);
  if (HETOPT_UNLIKELY(c == nullptr)) return allocationFailed();
  void* p = carve(c, chunkBytes);
  checkAfterOperation();
  m_lock.unlock();
  HETOPT_ASSERT((addr(p) & (alignment - 1)) == 0);
  return p;
}

void* PinnedPool::allocateZeroed(size_t count, size_t size) noexcept {
  size_t bytes;
  if (HETOPT_UNLIKELY(__builtin_mul_overflow(count, size, &bytes)))
    bytes = SIZE_MAX;  // fails in allocate(), counted there
  void* p = allocate(bytes);
  // Region memory is reused, so it is never known to be zero; the memset runs outside the lock.
  if (p != nullptr) memset(p, 0, bytes);
  return p;
}

// ---- release ----

void PinnedPool::releaseChunk(uintptr_t chunk, size_t bytes) noexcept {
  // [chunk, chunk + bytes) becomes free: its prevTag is already right for its predecessor, its head
  // is not yet written. Merges with a free predecessor and a free successor (I3), then inserts.
  uintptr_t begin = chunk;
  size_t total = bytes;
  const size_t prevTag = chunkAt(chunk)->prevTag;
  if ((prevTag & kPrevInUse) == 0) {
    FreeChunk* prev = freeAt(chunk - prevTag);
    HETOPT_ASSERT_INTERNAL(!isInUse(prev) && chunkSize(prev) == prevTag);
    treeErase(prev);
    begin = addr(prev);
    total += prevTag;
  }
  ChunkHeader* next = chunkAt(chunk + bytes);
  if (!isInUse(next)) {
    HETOPT_ASSERT_INTERNAL(nextOf(next)->prevTag == chunkSize(next));
    treeErase(static_cast<FreeChunk*>(next));
    total += chunkSize(next);
  }
  FreeChunk* merged = freeAt(begin);
  merged->head = total;
  chunkAt(begin + total)->prevTag = total;
  treeInsert(merged);
}

void PinnedPool::deallocate(void* ptr) noexcept {
  if (ptr == nullptr) return;
  HETOPT_ASSERT(owns(ptr) && (addr(ptr) & (kMinAlignment - 1)) == 0);
  ChunkHeader* c = headerOf(ptr);
  m_lock.lock();
  HETOPT_ASSERT(isInUse(c) && chunkSize(c) >= kMinChunkBytes);  // double free, trampled header
  const size_t bytes = chunkSize(c);
  HETOPT_ASSERT_INTERNAL((nextOf(c)->prevTag & kPrevInUse) != 0);
  m_inUse -= bytes;
  --m_liveBlocks;
  releaseChunk(addr(c), bytes);
  checkAfterOperation();
  m_lock.unlock();
}

// ---- resizing ----

bool PinnedPool::resizeInPlace(void* ptr, size_t size) noexcept {
  HETOPT_ASSERT(owns(ptr) && (addr(ptr) & (kMinAlignment - 1)) == 0);
  const size_t chunkBytes = chunkBytesFor(size);
  if (chunkBytes == 0) return false;
  ChunkHeader* c = headerOf(ptr);
  m_lock.lock();
  HETOPT_ASSERT(isInUse(c) && chunkSize(c) >= kMinChunkBytes);
  size_t have = chunkSize(c);
  if (chunkBytes > have) {
    ChunkHeader* next = nextOf(c);
    if (isInUse(next) || have + chunkSize(next) < chunkBytes) {
      m_lock.unlock();
      return false;
    }
    const size_t gained = chunkSize(next);
    treeErase(static_cast<FreeChunk*>(next));
    have += gained;
    m_inUse += gained;
    if (m_inUse > m_peakInUse) m_peakInUse = m_inUse;
    c->head = have | kInUse;
    chunkAt(addr(c) + have)->prevTag = kPrevInUse;
  }
  // Give back a tail that can be a chunk of its own (shrinking, or growth that took a larger
  // successor than needed); it merges with a free successor.
  if (have - chunkBytes >= kMinChunkBytes) {
    const size_t tail = have - chunkBytes;
    c->head = chunkBytes | kInUse;
    chunkAt(addr(c) + chunkBytes)->prevTag = kPrevInUse;
    m_inUse -= tail;
    releaseChunk(addr(c) + chunkBytes, tail);
  }
  checkAfterOperation();
  m_lock.unlock();
  return true;
}

void* PinnedPool::reallocate(void* ptr, size_t size) noexcept {
  if (ptr == nullptr) return allocate(size);
  if (resizeInPlace(ptr, size)) return ptr;
  void* moved = allocate(size);
  if (moved == nullptr) return nullptr;
  const size_t keep = usableSize(ptr);
  memcpy(moved, ptr, keep < size ? keep : size);  // outside the lock: only we hold both blocks
  deallocate(ptr);
  return moved;
}

size_t PinnedPool::usableSize(const void* ptr) const noexcept {
  HETOPT_ASSERT(owns(ptr) && (addr(ptr) & (kMinAlignment - 1)) == 0);
  const ChunkHeader* c = headerOf(ptr);
  HETOPT_ASSERT(isInUse(c));
  return chunkSize(c) - kHeaderBytes;
}

// ---- observation ----

PoolStats PinnedPool::stats() const noexcept {
  PoolStats s;
  m_lock.lock();
  s.capacityBytes = m_capacity;
  s.inUseBytes = m_inUse;
  s.peakInUseBytes = m_peakInUse;
  s.freeBytes = m_free;
  s.freeChunks = m_freeChunks;
  s.liveBlocks = m_liveBlocks;
  s.failedAllocations = m_failed;
  s.regions = m_regionCount.load(std::memory_order_relaxed);
  const FreeChunk* n = m_root;
  while (n != nullptr && n->child[kRight] != nullptr) n = n->child[kRight];
  s.largestFreeBlock = n != nullptr ? chunkSize(n) - kHeaderBytes : 0;
  m_lock.unlock();
  return s;
}

bool PinnedPool::validate(char* why, size_t whyBytes) const noexcept {
  m_lock.lock();
  const bool ok = validateLocked(why, whyBytes);
  m_lock.unlock();
  return ok;
}

namespace {

/// I4 below `node`: order within (lo, hi) exclusive, parent links, no red-red; returns the black
/// height, or -1 with `why` filled.
int validateSubtree(const FreeChunk* node, const FreeChunk* parent, const FreeChunk* lo,
                    const FreeChunk* hi, size_t* count, size_t* bytes, char* why, size_t whyBytes) {
  if (node == nullptr) return 1;
  if (node->parent != parent)
    return invalid(why, whyBytes, "tree node %p: parent link %p, expected %p", (const void*)node,
                   (const void*)node->parent, (const void*)parent),
           -1;
  if ((lo != nullptr && !keyLess(lo, node)) || (hi != nullptr && !keyLess(node, hi)))
    return invalid(why, whyBytes, "tree node %p (size %zu) out of (size, address) order",
                   (const void*)node, chunkSize(node)),
           -1;
  if (isInUse(node))
    return invalid(why, whyBytes, "tree node %p is marked in use", (const void*)node), -1;
  if (isRed(node) && (isRed(node->child[kLeft]) || isRed(node->child[kRight])))
    return invalid(why, whyBytes, "red tree node %p has a red child", (const void*)node), -1;
  ++*count;
  *bytes += chunkSize(node);
  const int l = validateSubtree(node->child[kLeft], node, lo, node, count, bytes, why, whyBytes);
  if (l < 0) return -1;
  const int r = validateSubtree(node->child[kRight], node, node, hi, count, bytes, why, whyBytes);
  if (r < 0) return -1;
  if (l != r)
    return invalid(why, whyBytes, "tree node %p: black heights %d and %d differ", (const void*)node,
                   l, r),
           -1;
  return l + (isRed(node) ? 0 : 1);
}

}  // namespace

void PinnedPool::copyForChild(const void* begin, size_t bytes, void* copy) const noexcept {
  const uintptr_t lo = addr(begin), hi = lo + bytes;
  const auto to = [&](uintptr_t a) { return static_cast<char*>(copy) + (a - lo); };
  const unsigned regions = m_regionCount.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < regions; ++i) {
    const uintptr_t fence = m_regions[i].end - kRegionOverhead;
    if (m_regions[i].begin < lo || m_regions[i].end > hi) continue;
    for (uintptr_t at = m_regions[i].begin; at < fence;) {
      const ChunkHeader* c = chunkAt(at);
      const size_t size = chunkSize(c);
      memcpy(to(at), c, isInUse(c) ? size : sizeof(FreeChunk));
      at += size;
    }
    memcpy(to(fence), chunkAt(fence), kRegionOverhead);
  }
}

bool PinnedPool::validateLocked(char* why, size_t whyBytes) const noexcept {
  size_t capacity = 0, inUse = 0, freeBytes = 0, freeChunks = 0, live = 0;
  const unsigned regions = m_regionCount.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < regions; ++i) {
    const uintptr_t begin = m_regions[i].begin, end = m_regions[i].end;
    const uintptr_t fence = end - kRegionOverhead;
    capacity += end - begin;
    bool prevInUse = true;
    size_t prevSize = 0;
    uintptr_t at = begin;
    while (at < fence) {
      const ChunkHeader* c = chunkAt(at);
      const size_t size = chunkSize(c);
      if ((c->head & kFlagMask & ~kInUse) != 0 || size < kMinChunkBytes || size > fence - at)
        return invalid(why, whyBytes, "region %u: chunk %p has a bad head %#zx (I1)", i,
                       (const void*)c, c->head);
      const size_t expectTag = prevInUse ? kPrevInUse : prevSize;
      if (c->prevTag != expectTag)
        return invalid(why, whyBytes, "region %u: chunk %p prevTag %#zx, expected %#zx (I2)", i,
                       (const void*)c, c->prevTag, expectTag);
      if (isInUse(c)) {
        inUse += size;
        ++live;
      } else {
        if (!prevInUse)
          return invalid(why, whyBytes,
                         "region %u: free chunks %p and its predecessor adjacent (I3)", i,
                         (const void*)c);
        if (treeFind(m_root, static_cast<const FreeChunk*>(c)) != c)
          return invalid(why, whyBytes, "region %u: free chunk %p (size %zu) not in the tree (I4)",
                         i, (const void*)c, size);
        freeBytes += size;
        ++freeChunks;
      }
      prevInUse = isInUse(c);
      prevSize = size;
      at += size;
    }
    const ChunkHeader* f = chunkAt(fence);
    if (at != fence || f->head != kInUse || f->prevTag != (prevInUse ? kPrevInUse : prevSize))
      return invalid(why, whyBytes,
                     "region %u: walk ends at %p, fence %p head %#zx prevTag %#zx (I1)", i,
                     (const void*)at, (const void*)f, f->head, f->prevTag);
  }

  size_t treeCount = 0, treeBytes = 0;
  if (m_root != nullptr && (m_root->red != 0 || m_root->parent != nullptr))
    return invalid(why, whyBytes, "tree root %p is red or has a parent (I4)", (const void*)m_root);
  if (validateSubtree(m_root, nullptr, nullptr, nullptr, &treeCount, &treeBytes, why, whyBytes) < 0)
    return false;
  // Every free chunk of the walk was found in the tree; equal counts make it a bijection.
  if (treeCount != freeChunks || treeBytes != freeBytes)
    return invalid(why, whyBytes, "tree holds %zu chunks / %zu bytes, regions %zu / %zu (I4)",
                   treeCount, treeBytes, freeChunks, freeBytes);
  if (m_free != freeBytes || m_freeChunks != freeChunks || m_inUse != inUse ||
      m_liveBlocks != live || m_capacity != capacity ||
      capacity != inUse + freeBytes + kRegionOverhead * regions || m_peakInUse < m_inUse)
    return invalid(
        why, whyBytes,
        "counters free %zu/%zu chunks %zu/%zu inUse %zu/%zu live %zu/%zu capacity %zu/%zu "
        "peak %zu (I5; counted/walked)",
        m_free, freeBytes, m_freeChunks, freeChunks, m_inUse, inUse, m_liveBlocks, live, m_capacity,
        capacity, m_peakInUse);
  return true;
}

void PinnedPool::checkAfterOperation() const noexcept {
  if constexpr (kDebugLevel >= 3) {
    char why[256];
    if (HETOPT_UNLIKELY(!validateLocked(why, sizeof why)))
      checkFailed("pool: heap check failed", why);
  }
}

}  // namespace hetopt::policies
