// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode: how far hetopt's driver thread has got, and the program's waits on it.
 * The thread enumerates the devices, then prepares the pinned memory (pool, direct policy or
 * registrations only) until it is ready or failed; whether and when it may start the driver at
 * all is driver_start.h's (DriverStart, kept here under the same mutex). Every wait of the
 * program's on that thread is bounded or needed. Any member may be called from any thread: one
 * mutex and its condition variable, never held across an OpenCL call.
 */
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/compiler.h"
#include "shim/core/driver_start.h"

namespace hetopt::shim {

/// The program's threads wait on the driver thread in four places: its first OpenCL call waits
/// for enumeration (concurrent first use of the ICD loader crashed PoCL; in a process that may
/// fork, that call starts the driver thread); a pool site's allocation waits for a pool in
/// preparation at most HETOPT_POOL_WAIT_MS; fork() and exit() before the program made its own
/// OpenCL call or context wait while hetopt's thread is inside the driver (at most
/// kDriverWaitMs). The pool's state and "enumerated" are also atomics, read without the mutex.
class Preparation {
 public:
  enum class Pool : int { Preparing, Ready, Failed };
  /// How long a fork() or exit() waits for hetopt's thread to leave the driver: a driver's start-up
  /// with a context, ~1 s on a cold NVIDIA GPU, and pinned memory for the pool. Past it the fork
  /// goes ahead (the child is warned when it calls OpenCL), and so does the exit.
  static constexpr int kDriverWaitMs = 5000;

  /// At start-up, before any thread: whether the driver starts early (DriverStart::decide).
  void decide(bool planLate, std::string forkImporter);
  /// The driver waits for the program's first OpenCL call.
  bool late();
  /// For the log: "early", or "late: ..." and why.
  std::string describeDriver();

  // ---- hetopt's threads -------------------------------------------------------------------------
  /// The driver thread begins: false when it must do nothing (`early` and a fork() came first).
  /// From true on it is inside the driver (fork and exit wait for it) until setInDriver(false).
  bool enterDriver(bool early);
  void setInDriver(bool inDriver);
  /// The late driver's loading thread, about to load the vendor libraries: false when the
  /// program's first OpenCL call or a fork() came first. endLoading() when done.
  bool beginLoading();
  void endLoading();
  /// The plan's device was found: the program's OpenCL calls may go ahead.
  void markEnumerated();
  /// The pinned memory is ready, `startMs` (a steady-clock reading, ms) after the thread began.
  void markReady(double startMs);
  /// The preparation failed: `why` is said once (warn) before the state is published, as a program
  /// woken by it may exit at once. Enumeration counts as done.
  void fail(const char* why);

  // ---- the program's threads --------------------------------------------------------------------
  /// Its OpenCL call, in callBegin (cheap after the first).
  void noteProgramCall() {
    if (HETOPT_UNLIKELY(!m_programCalledOpenCL.load(std::memory_order_relaxed)))
      m_programCalledOpenCL.store(true, std::memory_order_relaxed);
  }
  bool programCalledOpenCL() const { return m_programCalledOpenCL.load(std::memory_order_relaxed); }
  /// It created a context (fork and exit no longer wait for hetopt's thread).
  void noteProgramContext() { m_programMadeContext.store(true, std::memory_order_relaxed); }

  Pool pool() const { return static_cast<Pool>(m_pool.load(std::memory_order_acquire)); }
  bool enumerated() const { return m_enumerated.load(std::memory_order_acquire); }
  /// The program's OpenCL call waits until the devices are enumerated. With a late driver the
  /// first such call starts the driver thread (`startDriverThread()`, under the mutex); in a loop,
  /// as a fork() on another thread may make the driver late meanwhile.
  template <typename Start>
  void awaitEnumeration(Start startDriverThread) {
    if (HETOPT_LIKELY(enumerated())) return;
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_enumerated.load(std::memory_order_acquire)) {
      if (m_driver.late() && !m_lateStarted) {
        m_lateStarted = true;
        startDriverThread();
      }
      m_changed.wait(lock);
    }
  }
  /// A pool site's allocation: true when the pool is ready, waiting for one in preparation at most
  /// HETOPT_POOL_WAIT_MS, and never for one whose thread waits for the program's first OpenCL call.
  bool waitReady();
  /// Why it failed ("" while it did not).
  const char* failure() const { return m_failure; }
  double readyAfterMs() const { return m_readyAfterMs; }

  /// The program's fork(), before glibc's fork machinery: waits while hetopt's thread is inside
  /// the driver or loading it, or calls its start-up off when it has not begun.
  void beforeFork();
  /// The program's exit() before it made a context: waits while hetopt's thread is in the driver.
  void beforeExit();

  // ---- the fork protocol (lifecycle.cpp) --------------------------------------------------------
  void lockForFork() { m_mutex.lock(); }
  void unlockAfterFork() { m_mutex.unlock(); }
  /// What a forked child needs to know of its parent's driver (mutex held).
  struct Inherited {
    bool driverStarted;  ///< hetopt's thread started the driver in the parent
    bool programCalledOpenCL;
  };
  /// In the child (mutex held): no thread of hetopt's is there; nothing is prepared or waited for.
  Inherited forkChild();

 private:
  /// Waits (at most kDriverWaitMs) while hetopt's threads are inside the driver or loading it.
  void waitOutOfDriver(std::unique_lock<std::mutex>& lock, const char* what);

  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::atomic<int> m_pool{static_cast<int>(Pool::Preparing)};
  /// Set once the driver thread has enumerated platforms and devices (or failed).
  std::atomic<bool> m_enumerated{false};
  std::atomic<bool> m_programCalledOpenCL{false};
  std::atomic<bool> m_programMadeContext{false};
  DriverStart m_driver;        ///< under m_mutex
  bool m_lateStarted = false;  ///< late driver: the driver thread was started (under m_mutex)
  double m_readyAfterMs = 0;
  char m_failure[256] = {};
};

}  // namespace hetopt::shim
