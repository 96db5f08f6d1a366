// SPDX-License-Identifier: MIT
/**
 * @file How fork() treats a mapping (os::forkInheritance), and ForkCopies with the pool's
 * copyForChild: a pool over a shared mapping (NVIDIA's CL_MEM_ALLOC_HOST_PTR memory is one) forked
 * the way the shim's fork protocol does it. Without the copy the child's writes and frees land in
 * the parent's blocks and tree.
 */
#include "policies/fork_copies.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "policies/os_memory.h"
#include "policies/pool.h"

using hetopt::os::ForkInheritance;
using hetopt::os::forkInheritance;
using hetopt::policies::ForkCopies;
using hetopt::policies::PinnedPool;

namespace {

constexpr size_t kRegion = 4 << 20;

void* mapRegion(int flags) {
  void* p = mmap(nullptr, kRegion, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

/// The child's exit status: 0 when `fn` held, 1 when not, 2 when it died.
template <typename Fn>
int inChild(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn() ? 0 : 1);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 2;
  return WEXITSTATUS(status);
}

TEST(ForkInheritance, ClassifiesPrivateSharedAndDontforkMappings) {
  void* priv = mapRegion(MAP_PRIVATE);
  void* shared = mapRegion(MAP_SHARED);
  void* dontfork = mapRegion(MAP_PRIVATE);
  ASSERT_TRUE(priv && shared && dontfork);
  ASSERT_EQ(madvise(dontfork, kRegion, MADV_DONTFORK), 0);
  EXPECT_EQ(forkInheritance(priv), ForkInheritance::Copied);
  EXPECT_EQ(forkInheritance(static_cast<char*>(shared) + kRegion - 1), ForkInheritance::Shared);
  EXPECT_EQ(forkInheritance(dontfork), ForkInheritance::NotInherited);
  munmap(priv, kRegion);
  EXPECT_EQ(forkInheritance(priv), ForkInheritance::Unknown);  // nothing mapped there now
  munmap(shared, kRegion);
  munmap(dontfork, kRegion);
}

/// A pool over `region` with three live blocks (patterns 1, 2, 3) and a free chunk between them.
struct PoolFixture {
  PinnedPool pool;
  unsigned char* a = nullptr;
  unsigned char* c = nullptr;
  explicit PoolFixture(void* region) {
    pool.addRegion(region, kRegion);
    a = static_cast<unsigned char*>(pool.allocate(100000));
    auto* b = static_cast<unsigned char*>(pool.allocate(200000));
    c = static_cast<unsigned char*>(pool.allocate(300000));
    memset(a, 1, 100000);
    memset(b, 2, 200000);
    memset(c, 3, 300000);
    pool.deallocate(b);
  }
};

/// The shim's protocol around fork(): lock, copy, fork, place (child) or drop (parent), unlock.
/// The child checks its blocks, writes them, frees and allocates, and validates its pool.
int forkWithCopies(PoolFixture& f, void* region, bool copy) {
  ForkCopies copies;
  f.pool.lockForFork();
  if (copy) {
    void* stand = copies.add(region, kRegion);
    if (!stand) return 3;
    f.pool.copyForChild(region, kRegion, stand);
  }
  pid_t pid = fork();
  if (pid == 0) {
    bool ok = copies.placeInChild();
    f.pool.unlockAfterFork();
    ok = ok && f.a[0] == 1 && f.a[99999] == 1 && f.c[299999] == 3;
    memset(f.a, 9, 100000);  // the child's own copy, as after any fork
    f.pool.deallocate(f.c);
    void* d = f.pool.allocate(500000);
    ok = ok && d && f.pool.validate();
    _exit(ok ? 0 : 1);
  }
  copies.dropInParent();
  f.pool.unlockAfterFork();
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 2;
  return WEXITSTATUS(status);
}

TEST(ForkCopies, AChildOfAPoolOverSharedMemoryGetsItsOwnBlocksAndHeaders) {
  void* region = mapRegion(MAP_SHARED);
  ASSERT_NE(region, nullptr);
  PoolFixture f(region);
  ASSERT_EQ(forkWithCopies(f, region, true), 0);
  // The parent's blocks and tree are as they were: the child's writes went to its copy.
  EXPECT_EQ(f.a[0], 1);
  EXPECT_EQ(f.c[0], 3);
  char why[200] = {};
  EXPECT_TRUE(f.pool.validate(why, sizeof why)) << why;
  EXPECT_EQ(f.pool.stats().liveBlocks, 2u);
  munmap(region, kRegion);
}

TEST(ForkCopies, WithoutTheCopyTheChildWritesIntoTheParent) {
  // What the copy is for (and that this test can tell): the same fork with no copy.
  void* region = mapRegion(MAP_SHARED);
  ASSERT_NE(region, nullptr);
  PoolFixture f(region);
  forkWithCopies(f, region, false);
  EXPECT_EQ(f.a[0], 9);
  EXPECT_FALSE(f.pool.validate());
  munmap(region, kRegion);
}

TEST(ForkCopies, AChildGetsWhatDontforkWouldLeaveOut) {
  void* region = mapRegion(MAP_PRIVATE);
  ASSERT_NE(region, nullptr);
  ASSERT_EQ(madvise(region, kRegion, MADV_DONTFORK), 0);
  PoolFixture f(region);
  ASSERT_EQ(forkWithCopies(f, region, true), 0);
  EXPECT_EQ(f.a[0], 1);
  EXPECT_TRUE(f.pool.validate());
  munmap(region, kRegion);
}

TEST(ForkCopies, RefusesRangesThatDoNotStartOnAPage) {
  void* region = mapRegion(MAP_SHARED);
  ASSERT_NE(region, nullptr);
  ForkCopies copies;
  EXPECT_EQ(copies.add(static_cast<char*>(region) + 16, 4096), nullptr);
  EXPECT_EQ(inChild([&] { return copies.placeInChild(); }), 0);  // nothing to place: all placed
  munmap(region, kRegion);
}

}  // namespace
