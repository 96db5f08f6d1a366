// SPDX-License-Identifier: MIT
/** @file How far optimize mode's driver thread has got; see preparation.h.
 * The driver thread's marks, the program's bounded waits, fork and exit, the forked child. */
#include "shim/core/preparation.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include "common/clock.h"
#include "common/log.h"
#include "common/options.h"

namespace hetopt::shim {
void Preparation::decide(bool planLate, std::string forkImporter) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_driver.decide(planLate, std::move(forkImporter));
}

bool Preparation::late() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_driver.late();
}

std::string Preparation::describeDriver() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_driver.describe();
}

bool Preparation::enterDriver(bool early) {
  std::lock_guard<std::mutex> lock(m_mutex);
  // A fork() before this thread began: the driver is the program's, and its first OpenCL call
  // starts this again as the late driver's thread (awaitEnumeration).
  if (early && !m_driver.enterDriver()) return false;
  m_driver.setInDriver(true);
  return true;
}

void Preparation::setInDriver(bool inDriver) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_driver.setInDriver(inDriver);
  }
  if (!inDriver) m_changed.notify_all();
}

bool Preparation::beginLoading() {
  std::lock_guard<std::mutex> lock(m_mutex);
  // A fork() came first, or the program's own first call is loading them already.
  return !m_programCalledOpenCL.load(std::memory_order_relaxed) && m_driver.beginLoading();
}

void Preparation::endLoading() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_driver.endLoading();
  }
  m_changed.notify_all();
}

void Preparation::markEnumerated() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_enumerated.store(true, std::memory_order_release);
  }
  m_changed.notify_all();
}

void Preparation::markReady(double startMs) {
  m_readyAfterMs = monotonicMs() - startMs;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_pool.store(static_cast<int>(Pool::Ready), std::memory_order_release);
  }
  m_changed.notify_all();
}

void Preparation::fail(const char* why) {
  snprintf(m_failure, sizeof m_failure, "%s", why);
  // Said before the state is published: a program woken by it may exit at once, and exit ends
  // this thread wherever it is (the warning was lost now and then).
  warn("pinned pool unavailable (%s); candidate allocations use ordinary memory", why);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_pool.store(static_cast<int>(Pool::Failed), std::memory_order_release);
    m_enumerated.store(true, std::memory_order_release);
  }
  m_changed.notify_all();
}

bool Preparation::waitReady() {
  const Pool st = pool();
  if (HETOPT_LIKELY(st == Pool::Ready)) return true;
  if (st == Pool::Failed) return false;
  static const uint64_t waitMs = optionUnsigned(Option::POOL_WAIT_MS, 0, 600000);
  std::unique_lock<std::mutex> lock(m_mutex);
  // Never for a pool whose thread waits for the program's first OpenCL call (a late driver): the
  // program would wait here instead of making that call, each allocation the whole wait.
  m_changed.wait_for(lock, std::chrono::milliseconds(waitMs), [this] {
    return pool() != Pool::Preparing || (m_driver.late() && !m_lateStarted);
  });
  return pool() == Pool::Ready;
}

void Preparation::waitOutOfDriver(std::unique_lock<std::mutex>& lock, const char* what) {
  if (!m_changed.wait_for(lock, std::chrono::milliseconds(kDriverWaitMs),
                          [this] { return !m_driver.busy(); }))
    debug("%s went ahead after %d ms with hetopt's thread still inside the driver", what,
          kDriverWaitMs);
}

// A fork() before the program's first OpenCL call, while hetopt's thread is inside the driver
// (enumerating, making the early context, or the pool in a context of its own) or loading its
// libraries: the child would inherit the loader, the driver or the dynamic loader's lock in the
// middle of it, with no thread to finish it; ocl-icd 2.3's clGetPlatformIDs then spins for ever
// in the child on the "initializing" flag the parent's thread had set. Natively the program's
// child would start a driver of its own, so fork() waits until that thread is out (bounded: a
// driver thread forking while the pool thread waits for it must not stop both). A fork() before
// that thread began calls its start-up off: the driver is left to the program in this process
// (driver_start.h). After the program's first call the driver is the program's.
void Preparation::beforeFork() {
  if (m_programCalledOpenCL.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(m_mutex);
  if (m_programCalledOpenCL.load(std::memory_order_relaxed)) return;
  const bool wasLate = m_driver.late();
  if (m_driver.forkMustWait()) return waitOutOfDriver(lock, "fork()");
  lock.unlock();
  if (wasLate == m_driver.late()) return;
  m_changed.notify_all();  // a call waiting for the early driver starts the late one
  debug("fork() before hetopt's thread started the driver: the driver is left to the program");
}

// A program that ends before it made a context (a usage error, --help, a launcher, a platform
// query) while hetopt's thread is loading the driver or making a context: exit's handlers, among
// them the destructors that the driver's libraries registered as they loaded (LLVM's, under PoCL),
// run while that thread is still inside their constructors or their lazy start-up. On PoCL 14
// immediate exits in 100 died of SIGSEGV or SIGABRT that way, and 14 in 100 exits right after
// clGetPlatformIDs under an early-context plan (faults.exit_while_loading). Natively the program
// never starts that much of the driver. Once it made a context, exits during the pool's making
// did not crash (0 of 200).
void Preparation::beforeExit() {
  if (m_programMadeContext.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(m_mutex);
  waitOutOfDriver(lock, "exit()");
}

Preparation::Inherited Preparation::forkChild() {
  const Inherited in{m_driver.driverStarted(), programCalledOpenCL()};
  // The child has the pool's pages but not the shim's OpenCL context nor the pool thread: it
  // keeps using (and freeing) what it inherited and serves nothing new. Nothing in it waits for
  // the pool thread: m_changed's waiters, if any, were the parent's threads.
  m_pool.store(static_cast<int>(Pool::Failed), std::memory_order_release);
  snprintf(m_failure, sizeof m_failure, "forked child");
  m_enumerated.store(true, std::memory_order_release);
  m_driver.forkChild();
  return in;
}

}  // namespace hetopt::shim
