// SPDX-License-Identifier: MIT
/**
 * @file The fork protocol (shim/core/lifecycle.cpp) on the shim's parts, linked directly: fork()
 * while another thread holds the lock of each part (pinned pool, in-place registry, direct
 * allocator, trace recorder, module map), and while threads use all of them at once. Every child
 * must find every part usable (allocate, free what it inherited, record, look modules up) and exit
 * in time, and the parent go on. Without the protocol a child inherits the lock held and waits
 * forever (the reported hang: a child freeing an inherited pool block spun on the pool's lock).
 */
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "policies/direct.h"
#include "policies/pool.h"
#include "shim/core/callsite.h"
#include "shim/core/inplace_registry.h"
#include "shim/core/interceptor.h"
#include "shim/core/lifecycle.h"
#include "shim/core/state.h"
#include "trace/reader.h"
#include "trace/recorder.h"

namespace hetopt::shim {
namespace {

using namespace std::chrono_literals;

constexpr size_t kPoolBytes = 1 << 20;
constexpr size_t kMappingBytes = 1 << 16;  ///< the one mapping size the registry's plan names
constexpr size_t kBlockBytes = 1000;
constexpr unsigned char kMark = 0x5a;
constexpr auto kChildDeadline = 30s;  ///< far above a child's milliseconds, also under TSan

uint64_t threadId() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

trace::RecorderConfig traceConfig(const std::string& path) {
  trace::RecorderConfig c;
  c.path = path;
  c.header.pid = static_cast<uint64_t>(getpid());
  c.header.writerVersion = "test";
  c.classifyRegions = false;
  return c;
}

/// The shim's parts behind one interceptor that brackets them in the protocol's order, as the
/// optimize and trace interceptors bracket theirs; its child side is theirs too (the registry and
/// the direct allocator stand down, the recorder starts the child's own file).
class Parts final : public Interceptor {
 public:
  explicit Parts(const std::string& dir)
      : registry(mappingPlan()),
        direct(64),
        m_dir(dir),
        m_region(std::aligned_alloc(4096, kPoolBytes)) {
    pool.addRegion(m_region, kPoolBytes);
    m_standard = makePolicy(PolicyKind::Standard, PolicyEnv{});
    direct.setPolicy(m_standard.get());
    // Every range is refused (larger than the 1-byte "device limit"): a failure on record, whose
    // reason stats() reads under the registry's lock.
    registry.contextReady(PolicyEnv{}, 1);
    refusedMapping = mmap(nullptr, kMappingBytes, PROT_READ | PROT_WRITE, kMapFlags, -1, 0);
    registry.mapped(refusedMapping, kMappingBytes, kMapFlags);
    registry.transfer(refusedMapping, 16, true);
    std::string error;
    recorderOpen = recorder.open(traceConfig(m_dir + "/parent.trace"), &error);
  }
  ~Parts() override {
    munmap(refusedMapping, kMappingBytes);
    std::free(m_region);
  }

  void forkPrepare() override {
    pool.lockForFork();
    registry.lockForFork();
    direct.lockForFork();
    recorder.mutex().lock();
  }
  void forkParent() override {
    recorder.mutex().unlock();
    direct.unlockAfterFork();
    registry.unlockAfterFork();
    pool.unlockAfterFork();
  }
  void forkChild() override {
    forkParent();
    registry.forkChild();
    direct.forkChild();
    auto lock = recorder.lock();
    std::string error;
    childRecorderRestarted = recorder.restartInChild(traceConfig(childTracePath(getpid())), &error);
  }

  std::string childTracePath(pid_t pid) const {
    return m_dir + "/child-" + std::to_string(pid) + ".trace";
  }

  static constexpr int kMapFlags = MAP_PRIVATE | MAP_ANONYMOUS;
  policies::PinnedPool pool;
  InplaceRegistry registry;
  policies::DirectAllocator direct;
  trace::Recorder recorder;
  void* refusedMapping = nullptr;
  bool recorderOpen = false;
  bool childRecorderRestarted = false;

 private:
  static Plan mappingPlan() {
    Plan p;
    p.mmapMinBytes = p.mmapMaxBytes = kMappingBytes;
    return p;
  }
  std::string m_dir;
  void* m_region;
  std::unique_ptr<AllocationPolicy> m_standard;
};

bool marked(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  return b[0] == kMark && b[kBlockBytes - 1] == kMark;
}
void* mark(void* p) {
  if (p) memset(p, kMark, kBlockBytes);
  return p;
}

/// Blocks the parent made before fork(): the child must be able to read and free them.
struct Inherited {
  void* poolBlock;
  void* directBlock;
};

/// Uses every part the way the shim does; what failed, or empty. In a child, direct blocks are no
/// longer made or released (their policy's context is the parent's) and the registry stands down.
std::string useEveryPart(Parts& p, const Inherited& in, bool child) {
  std::string failed;
  auto check = [&](bool ok, const char* what) {
    if (!ok) failed += std::string(failed.empty() ? "" : "; ") + what;
  };
  // Pinned pool: a block of its own, and the inherited one freed.
  void* own = mark(p.pool.allocate(kBlockBytes));
  check(own != nullptr, "pool allocate");
  p.pool.deallocate(own);
  check(marked(in.poolBlock), "inherited pool block intact");
  p.pool.deallocate(in.poolBlock);
  check(p.pool.validate(), "pool consistent");
  // Direct allocator: the inherited block is still owned and readable, stats() can lock.
  check(p.direct.owns(in.directBlock) && p.direct.usableSize(in.directBlock) >= kBlockBytes,
        "direct block owned");
  check(marked(in.directBlock), "inherited direct block intact");
  void* made = p.direct.allocate(kBlockBytes, 0, false);
  check((made != nullptr) != child, child ? "child made a direct block" : "direct allocate");
  if (made) p.direct.deallocate(made);
  check(p.direct.stats().liveBlocks >= 1, "direct stats");
  p.direct.deallocate(in.directBlock);
  // In-place registry: its stats read the refusal under its lock; an unmap is handled.
  check(p.registry.stats().find("1 refused") != std::string::npos, "registry stats");
  check(p.registry.unmapping(p.refusedMapping, kMappingBytes, true) != child, "registry unmap");
  // Recorder: an allocation and its free recorded (the child into its own file).
  {
    auto lock = p.recorder.lock();
    const uint32_t t = p.recorder.thread(threadId());
    const uint64_t pcs[] = {reinterpret_cast<uintptr_t>(&useEveryPart)};
    const uint32_t site = p.recorder.internSite(pcs, 1);
    const auto ptr = reinterpret_cast<uintptr_t>(in.poolBlock);
    p.recorder.recordAlloc(t, 0, ptr, kBlockBytes, 0, site, 0);
    check(p.recorder.recordFree(t, ptr), "recorded free");
    if (child) p.recorder.finish();
  }
  check(!child || p.childRecorderRestarted, "child trace started");
  // Module map: a rebuild check takes its mutex; this test is found.
  ModuleMap::instance().refresh();
  check(ModuleMap::instance().find(reinterpret_cast<uintptr_t>(&useEveryPart)) != nullptr,
        "module lookup");
  return failed;
}

class ForkProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hetopt-fork-test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    m_dir = dir;
    m_parts = std::make_unique<Parts>(m_dir);
    ASSERT_TRUE(m_parts->recorderOpen);
    installForkProtocol();
    g_interceptor.store(m_parts.get(), std::memory_order_release);
  }
  void TearDown() override {
    g_interceptor.store(nullptr, std::memory_order_release);
    {
      auto lock = m_parts->recorder.lock();
      m_parts->recorder.finish();
    }
    m_parts.reset();
    std::string rm = "rm -rf '" + m_dir + "'";
    EXPECT_EQ(system(rm.c_str()), 0);
  }

  Inherited makeBlocks() {
    return {mark(m_parts->pool.allocate(kBlockBytes)),
            mark(m_parts->direct.allocate(kBlockBytes, 0, false))};
  }

  /// fork(): the child uses every part and exits with the verdict; the parent waits for it (at
  /// most kChildDeadline), frees `blocks` and reads the child's trace. What went wrong, or empty.
  std::string forkAndCheckChild(const Inherited& blocks) {
    if (!blocks.poolBlock || !blocks.directBlock) return "no blocks to inherit";
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string failed = useEveryPart(*m_parts, blocks, true);
      if (!failed.empty()) {
        const std::string line = "child: " + failed + "\n";
        ssize_t w = write(2, line.data(), line.size());
        (void)w;
      }
      _exit(failed.empty() ? 0 : 1);
    }
    if (pid < 0) return "fork failed";
    std::string verdict = waitForChild(pid);
    // The parent's copies are still its own to free.
    m_parts->pool.deallocate(blocks.poolBlock);
    m_parts->direct.deallocate(blocks.directBlock);
    if (!verdict.empty()) return verdict;
    trace::Trace t;
    std::string error;
    if (!trace::readTraceFile(m_parts->childTracePath(pid), &t, &error))
      return "child trace: " + error;
    return t.complete && t.header.pid == static_cast<uint64_t>(pid) ? "" : "child trace incomplete";
  }

  static std::string waitForChild(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + kChildDeadline;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return "the child did not finish: it inherited a lock held";
      }
      std::this_thread::sleep_for(2ms);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0
               ? ""
               : "the child failed (its stderr says what)";
  }

  /// fork() while another thread holds a part's lock (`take`, given back with `give` 200 ms later):
  /// fork() waits for it, the child gets it unlocked, and the parent goes on.
  void forkWhileHeld(const std::function<void()>& take, const std::function<void()>& give) {
    const Inherited inherited = makeBlocks();  // before: making them takes the locks
    std::atomic<bool> held{false}, checked{false};
    std::thread holder([&] {
      take();
      held.store(true);
      std::this_thread::sleep_for(200ms);
      give();
      // Alive until fork() is over: to TSan, a thread that ended unjoined before it is a leak.
      while (!checked.load()) std::this_thread::sleep_for(1ms);
    });
    while (!held.load()) std::this_thread::yield();
    EXPECT_EQ(forkAndCheckChild(inherited), "");
    checked.store(true);
    holder.join();
    Inherited blocks = makeBlocks();
    EXPECT_EQ(useEveryPart(*m_parts, blocks, false), "") << "in the parent";
  }

  std::string m_dir;
  std::unique_ptr<Parts> m_parts;
};

TEST_F(ForkProtocol, ChildOfForkWhilePoolLockIsHeld) {
  forkWhileHeld([&] { m_parts->pool.lockForFork(); }, [&] { m_parts->pool.unlockAfterFork(); });
}

TEST_F(ForkProtocol, ChildOfForkWhileRegistryLockIsHeld) {
  forkWhileHeld([&] { m_parts->registry.lockForFork(); },
                [&] { m_parts->registry.unlockAfterFork(); });
}

TEST_F(ForkProtocol, ChildOfForkWhileDirectTableLockIsHeld) {
  forkWhileHeld([&] { m_parts->direct.lockForFork(); }, [&] { m_parts->direct.unlockAfterFork(); });
}

TEST_F(ForkProtocol, ChildOfForkWhileRecorderLockIsHeld) {
  forkWhileHeld([&] { m_parts->recorder.mutex().lock(); },
                [&] { m_parts->recorder.mutex().unlock(); });
}

TEST_F(ForkProtocol, ChildOfForkWhileModuleMapIsRebuilt) {
  forkWhileHeld([] { ModuleMap::instance().lockForFork(); },
                [] { ModuleMap::instance().unlockAfterFork(); });
}

// Threads that take every lock again and again, as a busy program's do (the direct allocator's
// table is rebuilt every 32 frees: a child forked in the middle of one would wait forever). They
// pause between bursts: a thread that never lets go of a mutex starves the fork's prepare.
TEST_F(ForkProtocol, ChildrenOfForksWhileThreadsUseEveryPart) {
  std::atomic<bool> stop{false};
  void* tracked = mmap(nullptr, kMappingBytes, PROT_READ | PROT_WRITE, Parts::kMapFlags, -1, 0);
  ASSERT_NE(tracked, MAP_FAILED);
  Parts& p = *m_parts;
  std::vector<std::function<void()>> uses = {
      [&] { p.pool.deallocate(p.pool.allocate(kBlockBytes)); },
      [&] { p.direct.deallocate(p.direct.allocate(kBlockBytes, 0, false)); },
      [&] {
        p.registry.mapped(tracked, kMappingBytes, Parts::kMapFlags);
        p.registry.unmapping(tracked, kMappingBytes, false);
      },
      [&] {
        auto lock = p.recorder.lock();
        const uint32_t t = p.recorder.thread(threadId());
        const uint64_t pcs[] = {reinterpret_cast<uintptr_t>(&useEveryPart)};
        const uint32_t site = p.recorder.internSite(pcs, 1);
        p.recorder.recordAlloc(t, 0, 0x10000, kBlockBytes, 0, site, 0);
        p.recorder.recordFree(t, 0x10000);
      },
      [] { ModuleMap::instance().refresh(); },
  };
  std::vector<std::thread> users;
  for (const auto& use : uses)
    users.emplace_back([&stop, &use] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 64; ++i) use();
        std::this_thread::sleep_for(100us);
      }
    });
  std::string failed;
  for (int i = 0; i < 30 && failed.empty(); ++i) {
    failed = forkAndCheckChild(makeBlocks());
    if (!failed.empty()) failed += " (fork " + std::to_string(i) + ")";
  }
  stop.store(true);
  for (std::thread& u : users) u.join();
  munmap(tracked, kMappingBytes);
  EXPECT_EQ(failed, "");
  Inherited blocks = makeBlocks();
  EXPECT_EQ(useEveryPart(p, blocks, false), "") << "in the parent";
}

}  // namespace
}  // namespace hetopt::shim
